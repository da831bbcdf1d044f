insert into invoices ("ID", customer, item, amount, note) values (102, 'Charlie', 'enchilada', 12.00, 'extra cheese'), (103, 'Dan', 'beans', 3.10, null);
insert into invoice_status ("ID", "InvoiceID", status) values (77, 102, 'pending');
