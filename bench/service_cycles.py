"""The in-process `zync run` that bench/cycle_profile.py and bench/file_growth.py drive cycle by cycle."""

from __future__ import annotations

import os


def invoices_service(target, project):
    """A `Service` running the invoices project's output model, its status line silent."""
    from service.run import Service
    from zync.progress import Progress

    return Service(target, select=project.name("new_invoices"), status=Progress.for_run(open(os.devnull, "w"), live=False),
                   root=project.path)


def full_cycle(service) -> list:
    """One cycle and the runs of the records it held back, as `zync run` does them next: every stage's report."""
    reports = service.cycle()
    while service.rerun:
        reports += service.cycle()
    return reports


def produce_rounds(producer, at_least: int, invoice: int) -> tuple[int, int]:
    """Whole invoice rounds (bench/latency.py's stream shape) from `invoice` on until at least `at_least`
    events are sent, flushed: (events sent, the next invoice number)."""
    from bench.latency import invoice_round

    sent = 0
    while sent < at_least:
        for event in invoice_round(invoice):
            producer.produce(event)
            sent += 1
        invoice += 1
    producer.producer.flush(30)
    return sent, invoice
