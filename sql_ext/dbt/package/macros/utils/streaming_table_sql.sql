{#- The CREATE / CREATE OR REPLACE / ALTER STREAMING TABLE statement of a streaming model. -#}
{% macro streaming_table_sql(verb, relation, trigger, sql) -%}
  {%- set partition_by = config.get('partition_by') -%}
  {%- if partition_by is string -%}{%- set partition_by = [partition_by] -%}{%- endif -%}
  {%- set location = config.get('location') -%}
  {%- if not location and config.get('location_root') -%}
    {%- set location = config.get('location_root') ~ '/' ~ relation.identifier -%}
  {%- endif -%}
  {%- set checkpoint = config.get('checkpoint') -%}
  {%- set properties = config.get('tblproperties') or {} -%}
{{ verb }} STREAMING TABLE {{ relation }}
{%- if partition_by %}
  PARTITIONED BY ({{ partition_by | join(', ') }})
{%- endif %}
{%- if location %}
  LOCATION {{ sql_ext.string_literal(location) }}
{%- endif %}
{%- if checkpoint %}
  CHECKPOINT {{ sql_ext.string_literal(checkpoint) }}
{%- endif %}
{%- if properties %}
  TBLPROPERTIES (
  {%- for key, value in properties.items() -%}
    {{ sql_ext.string_literal(key) }} = {{ sql_ext.string_literal(value) }}
    {%- if not loop.last %}, {% endif -%}
  {%- endfor -%}
  )
{%- endif %}
  {{ sql_ext.trigger_clause(trigger) }}
AS
{{ sql }}
{%- endmacro %}
