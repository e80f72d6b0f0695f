{#- dbt run-operation sql_ext.stop_stream --args '{name: <model or schema.table>}': STOP
    STREAM; the table and checkpoint stay, and the next dbt run starts the stream again. -#}
{% macro stop_stream(name) %}
  {%- set relation = sql_ext.stream_relation(name) -%}
  {%- do run_query('STOP STREAM ' ~ relation) -%}
  {{ log("stopped the stream of " ~ relation, info=True) }}
{% endmacro %}
