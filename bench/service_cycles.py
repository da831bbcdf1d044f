"""The in-process `zync run` that bench/cycle_profile.py and bench/file_growth.py drive cycle by cycle."""

from __future__ import annotations

import os


def invoices_service(target, project):
    """A `Service` running the invoices project's output model, its status line silent."""
    from service.run import Service
    from service.status import RunStatus

    return Service(target, select=project.name("new_invoices"), status=RunStatus(open(os.devnull, "w"), live=False),
                   root=project.path)


def full_cycle(service) -> list:
    """One cycle and the runs of the records it held back, as `zync run` does them next: every stage's report."""
    reports = service.cycle()
    while service.rerun:
        reports += service.cycle()
    return reports
