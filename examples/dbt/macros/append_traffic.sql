{#- dbt run-operation append_traffic --args '{batch: 0}': appends readings 7 s apart (batch n
    holds readings n*rows .. (n+1)*rows - 1) to the Delta table raw.traffic (the schema is the
    var raw_schema), the source of the models. Each call is one append, as a feed would make. -#}
{% macro append_traffic(batch=0, rows=120) %}
  {%- set raw = var('raw_schema', 'raw') -%}
  {%- do run_query("CREATE DATABASE IF NOT EXISTS " ~ raw) -%}
  {%- do run_query("CREATE TABLE IF NOT EXISTS " ~ raw ~ ".traffic (freeway STRING, "
                   ~ "lane_flow INT, event_time TIMESTAMP) USING DELTA") -%}
  {%- do run_query(
      "INSERT INTO " ~ raw ~ ".traffic SELECT IF(id % 3 = 0, 'US-101', 'I-80'), "
      ~ "CAST(100 + (id * 37) % 500 AS INT), "
      ~ "TIMESTAMP '2024-01-01 08:00:00' + make_interval(0, 0, 0, 0, 0, 0, id * 7) "
      ~ "FROM range(" ~ batch * rows ~ ", " ~ (batch + 1) * rows ~ ")") -%}
  {{ log("appended readings " ~ batch * rows ~ ".." ~ ((batch + 1) * rows - 1)
         ~ " to " ~ raw ~ ".traffic", info=True) }}
{% endmacro %}
