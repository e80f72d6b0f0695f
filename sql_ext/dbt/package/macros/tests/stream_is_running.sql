{#- A model's stream runs: one failing row (its state and last error) when SHOW STREAMS lists
    it other than RUNNING, or does not list it. For continuous (TRIGGER EVERY) models. -#}
{% test stream_is_running(model) %}
  {%- set wanted = (model.schema ~ '.' ~ model.identifier) | lower -%}
  {%- set found = {'state': 'MISSING', 'error': none} -%}
  {%- if execute -%}
    {%- for row in run_query('SHOW STREAMS').rows
          if (row['name'] | replace('`', '') | lower) == wanted -%}
      {%- do found.update({'state': row['state'], 'error': row['last_error']}) -%}
    {%- endfor -%}
  {%- endif -%}
  select {{ sql_ext.string_literal(wanted) }} as stream,
         {{ sql_ext.string_literal(found['state']) }} as state,
         {{ sql_ext.string_literal(found['error'] or '') }} as last_error
  where {{ sql_ext.string_literal(found['state']) }} <> 'RUNNING'
{% endtest %}
