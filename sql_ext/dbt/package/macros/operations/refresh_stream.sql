{#- dbt run-operation sql_ext.refresh_stream --args '{name: <model or schema.table>}': one
    exactly-once pass over what the sources hold now (REFRESH STREAMING TABLE). -#}
{% macro refresh_stream(name) %}
  {%- set relation = sql_ext.stream_relation(name) -%}
  {%- do run_query('REFRESH STREAMING TABLE ' ~ relation) -%}
  {{ log("refreshed " ~ relation, info=True) }}
{% endmacro %}
