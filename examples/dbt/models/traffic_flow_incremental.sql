-- The same panes as an incremental model: each run recomputes only the panes that new readings
-- can reach and merges them on (freeway, time_start). A reading at t joins the panes starting
-- in (t - 50 s, t], so for readings appended in time order, panes starting at or after the
-- newest stored pane start minus 50 s are recomputed from every reading at or after that point.
{{ config(materialized='incremental', incremental_strategy='merge',
          unique_key=['freeway', 'time_start']) }}

WITH panes AS (
  SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end,
         MAX(lane_flow) AS flow, COUNT(*) AS readings
  FROM {{ source('raw', 'traffic') }}
  {% if is_incremental() %}
  WHERE event_time >= (SELECT MAX(time_start) - INTERVAL 50 SECONDS FROM {{ this }})
  {% endif %}
  WINDOW TIME_INTERVAL(50, 25) ON event_time OVER (PARTITION BY freeway)
)
SELECT * FROM panes
{% if is_incremental() %}
WHERE time_start >= (SELECT MAX(time_start) - INTERVAL 50 SECONDS FROM {{ this }})
{% endif %}
