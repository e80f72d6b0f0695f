{#- The TRIGGER clause of a model's `trigger` config: 'available_now' (the default), a number
    of seconds, or a duration such as '30 seconds' or '1 minute'. -#}
{% macro trigger_clause(trigger) -%}
  {%- if sql_ext.is_available_now(trigger) -%}
    TRIGGER AVAILABLE NOW
  {%- elif trigger is number or (trigger | string | float(-1)) >= 0 -%}
    TRIGGER EVERY {{ trigger }}
  {%- else -%}
    TRIGGER EVERY INTERVAL {{ sql_ext.string_literal(trigger) }}
  {%- endif -%}
{%- endmacro %}
