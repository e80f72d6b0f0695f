{#-
  A model as a sql-ext streaming table: CREATE STREAMING TABLE with the model's configs.
  The first run creates the table and starts the stream; a later run with the same definition
  makes one more exactly-once pass from the checkpoint (trigger 'available_now', the default)
  or leaves a running continuous stream alone (and starts it if it is not running). A changed
  definition is an error naming the change (on_configuration_change 'fail', the default) or is
  applied in place on the same checkpoint ('apply': ALTER STREAMING TABLE). --full-refresh
  starts over: new contents, new checkpoint, the sources read again from their start.
-#}
{% materialization streaming_table, adapter='spark' %}
  {%- set target_relation = api.Relation.create(identifier=model['alias'], schema=schema,
                                                database=database, type='table') -%}
  {%- set trigger = config.get('trigger', 'available_now') -%}
  {#- dbt gives every model on_configuration_change 'apply' unless it is written: for streams
      the default is 'fail', so look at what the model's configs say. -#}
  {%- set on_change = model.get('unrendered_config', {}).get('on_configuration_change',
                                                            'fail') -%}
  {%- if on_change not in ('fail', 'apply') -%}
    {{ exceptions.raise_compiler_error(
        "streaming_table " ~ this ~ ": on_configuration_change is '" ~ on_change ~ "'; a "
        ~ "streaming model takes 'fail' (the default: a changed definition is an error that "
        ~ "names the change) or 'apply' (the change applied in place on the same checkpoint)") }}
  {%- endif -%}
  {%- if not sql_ext.is_available_now(trigger) and sql_ext.runs_in_dbt_process() -%}
    {{ exceptions.raise_compiler_error(
        "streaming_table " ~ this ~ ": trigger '" ~ trigger ~ "' keeps a stream running after "
        ~ "dbt returns, but under method: session the stream lives in dbt's own process and "
        ~ "would die with it. Use trigger 'available_now' (one exactly-once pass per dbt run), "
        ~ "or method: thrift against `sql-ext thriftserver` for a continuous stream") }}
  {%- endif -%}

  {%- if flags.EMPTY -%}
    {#- dbt wants a 'main' statement from every materialization: one that touches nothing. -#}
    {%- call statement('main') -%}
      SELECT {{ sql_ext.string_literal(this ~ ': --empty starts no stream') }} AS skipped
    {%- endcall -%}
    {{ log("streaming_table " ~ this ~ ": --empty starts no stream; nothing was done",
           info=True) }}
    {{ return({'relations': []}) }}
  {%- endif -%}

  {%- set old_relation = adapter.get_relation(database=database, schema=schema,
                                              identifier=model['alias']) -%}
  {%- if old_relation is none -%}
    {%- set verb = 'CREATE' -%}
  {%- elif should_full_refresh() -%}
    {% do exceptions.warn(
        "streaming_table " ~ this ~ ": --full-refresh stops the stream, empties the table, "
        ~ "removes its checkpoint and reads every source again from its start. Rows a source "
        ~ "no longer holds (a Delta source after VACUUM or with expired log files, a file "
        ~ "source whose files were removed) are lost from the table.") %}
    {%- set verb = 'CREATE OR REPLACE' -%}
  {%- elif on_change == 'apply' -%}
    {%- set verb = 'ALTER' -%}
  {%- else -%}
    {%- set verb = 'CREATE' -%}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}
  {%- call statement('main') -%}
    {{ sql_ext.streaming_table_sql(verb, target_relation, trigger, compiled_code) }}
  {%- endcall -%}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
