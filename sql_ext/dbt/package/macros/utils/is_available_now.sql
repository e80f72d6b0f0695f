{#- Whether a model's `trigger` config means one pass over what the sources hold. -#}
{% macro is_available_now(trigger) -%}
  {{ return(trigger is none or (trigger | string | lower | replace(' ', '_'))
            == 'available_now') }}
{%- endmacro %}
