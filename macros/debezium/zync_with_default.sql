{#
  A field a record was written without, as Avro's schema resolution reads
  it: the reader schema's default. `ALTER TABLE ... ADD COLUMN qty int NOT
  NULL DEFAULT 0` gives PostgreSQL's older rows 0, and Debezium's schema
  `qty` with default 0, but the records of those rows written before the
  column existed hold no `qty`: the raw table keeps them null (what was
  written), and mirrors and transforms read them as the default. `sql` is
  the field, `parent` its record (null in a delete's `after`: kept null),
  `schema_id` the row's writer schema id, `default` {default, absentIn}.
#}
{% macro zync_with_default(sql, parent, schema_id, default) -%}
  {{ return('case when ' ~ parent ~ ' is not null and ' ~ schema_id ~ ' in (' ~ default['absentIn'] | join(', ')
            ~ ') then ' ~ zync_default_literal(default['default']) ~ ' else ' ~ sql ~ ' end') }}
{%- endmacro %}
