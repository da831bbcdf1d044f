update invoice_status set status = 'collections', changed_at = now() where "ID" = 192;
update invoice_status set status = 'paid', changed_at = now() where "ID" = 77;
update invoice_status set status = 'paid', changed_at = now() where "ID" = 80;
