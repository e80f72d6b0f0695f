-- examples/spl/sensors.spl:14: source for SPL stream SensorReadings
CREATE TABLE IF NOT EXISTS SensorReadings (
  sensor STRING NOT NULL,
  level INT NOT NULL,
  temp DOUBLE NOT NULL,
  ts TIMESTAMP NOT NULL
) USING DELTA;

-- examples/spl/sensors.spl:18: view for SPL stream Fahrenheit
CREATE OR REPLACE VIEW Fahrenheit AS
SELECT sensor,
       level,
       temp,
       ts,
       CAST((((temp * 9.0D) / 5.0D) + 32.0D) AS DOUBLE) AS tempF
FROM SensorReadings;

-- examples/spl/sensors.spl:22: view for SPL stream Reporting
CREATE OR REPLACE VIEW Reporting AS
SELECT sensor,
       level,
       temp,
       ts,
       tempF
FROM Fahrenheit
WHERE (level > 0);

-- examples/spl/sensors.spl:27: streaming table for SPL stream SensorStats
CREATE STREAMING TABLE SensorStats AS
SELECT sensor,
       CAST(COUNT(*) AS INT) AS readings,
       CAST(MAX(CAST((((temp * 9.0D) / 5.0D) + 32.0D) AS DOUBLE)) AS DOUBLE) AS maxF,
       CAST((SUM(level) DIV COUNT(level)) AS INT) AS avgLevel,
       CAST(FIRST(temp) AS DOUBLE) AS firstTemp,
       CAST(COLLECT_LIST(level) AS ARRAY<INT>) AS levels
FROM STREAM(SensorReadings)
WHERE (level > 0)
WINDOW TUMBLING COUNT(3) OVER (PARTITION BY sensor);

-- examples/spl/sensors.spl:34: streaming table for SPL stream SensorMinutes
CREATE STREAMING TABLE SensorMinutes AS
SELECT sensor,
       CAST(PANE_START() AS TIMESTAMP) AS `start`,
       CAST(AVG(temp) AS DOUBLE) AS avgTemp,
       CAST(COUNT(*) AS INT) AS readings
FROM STREAM(SensorReadings)
WINDOW TIME_INTERVAL(60.0, 30.0, 0, 0) ON ts OVER (PARTITION BY sensor) WATERMARK DELAY 5.0;

-- Not translated:
--   examples/spl/sensors.spl:13:5: FileSource SensorReadings: FileSource is not translated (only Aggregate, Filter and Functor are); its stream SensorReadings is a source table
--   examples/spl/sensors.spl:43:5: FileSink Alerts: FileSink is not translated (only Aggregate, Filter and Functor are)
