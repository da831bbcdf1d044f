{#
  A predicate for a rule that left joins a lookup: true for every joined
  row, and it fails the run when a record matches several rows of the
  lookup, since that record would make several events and each input
  record must make exactly one. `alias` is the lookup's rows in the rule,
  each with zync_lookup_matches (how many rows share its join keys);
  `record` is the alias whose Kafka coordinates the error names. The
  compiler writes the join itself into the model.
#}
{% macro zync_lookup_row_is_unique(alias, lookup, ref_name, record) -%}
(coalesce({{ alias }}.zync_lookup_matches, 1) = 1 or cast(raise_error(concat(
    {{ zync_string('zync: lookup ' ~ lookup ~ ' (' ~ ref_name ~ ') has ') }}, {{ alias }}.zync_lookup_matches,
    ' rows matching the record ', {{ record }}.kafka.topic, '@', {{ record }}.kafka.partition, ':', {{ record }}.kafka.offset,
    '; the columns a lookup is joined on must identify one row. Nothing was written.'
)) as boolean))
{%- endmacro %}
