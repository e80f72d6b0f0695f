{#- dbt run-operation sql_ext.show_streams: SHOW STREAMS, printed as a table. -#}
{% macro show_streams() %}
  {%- set streams = run_query('SHOW STREAMS') -%}
  {%- if execute -%}
    {%- do streams.select(['name', 'state', 'trigger', 'batch', 'rows_out', 'last_progress',
                           'last_error']).print_table(max_rows=None, max_column_width=60) -%}
  {%- endif -%}
{% endmacro %}
