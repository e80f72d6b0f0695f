-- What the streaming model traffic_flow holds now: its open panes (bounds, partial
-- aggregates, state) and its watermark, read from its checkpoint whenever the view is queried.
{{ config(materialized='view') }}

SELECT partition.freeway AS freeway, pane_start, pane_end, partials, state, watermark
FROM window_state('{{ ref("traffic_flow") }}')
