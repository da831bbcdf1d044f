insert into invoice_status ("ID", "InvoiceID", status) values (192, 103, 'pending');
update invoice_status set status = 'closed', changed_at = now() where "ID" = 32;
