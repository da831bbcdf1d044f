-- Beyond zync's demo: an edited invoice (a partial update of its own
-- columns) and a deleted one (Debezium's delete and tombstone; the sink
-- deletes the row).
update invoices set item = 'tamale' where "ID" = 100;
delete from invoices where "ID" = 101;
