{#- No two rows of a streaming model share a window key: `columns` are the partition keys,
    group keys and the window's identity (WINDOW_ID() or PANE_START()). A re-fired pane must
    have replaced its earlier row, and a replayed micro-batch must not have written twice. -#}
{% test no_duplicate_window_keys(model, columns) %}
  select {{ columns | join(', ') }}, count(*) as rows_with_this_key
  from {{ model }}
  group by {{ columns | join(', ') }}
  having count(*) > 1
{% endtest %}
