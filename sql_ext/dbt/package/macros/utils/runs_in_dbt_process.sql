{#- Whether Spark runs inside this dbt process (method: session through `sql-ext dbt`, which
    sets spark.sql_ext.dbt.in_process), where a stream cannot outlive the dbt command. -#}
{% macro runs_in_dbt_process() -%}
  {%- if not execute -%}{{ return(false) }}{%- endif -%}
  {%- set answer = run_query('SET spark.sql_ext.dbt.in_process') -%}
  {{ return(answer.rows | length > 0 and answer.rows[0][1] == 'true') }}
{%- endmacro %}
