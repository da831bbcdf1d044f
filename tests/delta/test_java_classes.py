"""The JVM classes zync calls Delta and Spark through (zync/spark_internals.py java_class): a class is
made once, and a static method of it is looked up in the JVM once, not at every call."""

from __future__ import annotations

from py4j import protocol
from py4j.java_gateway import GatewayClient

from zync.spark_internals import java_class


def test_a_static_method_is_looked_up_once_and_a_field_at_every_read(spark, monkeypatch):
    # A class the project does not call otherwise, so that what this process did before does not count.
    math = java_class(spark, "java.lang.StrictMath")
    assert java_class(spark, "java.lang.StrictMath") is math
    lookups: list[str] = []
    send = GatewayClient.send_command

    def counting(self, command, *args, **kwargs):
        if command.startswith(protocol.REFLECTION_COMMAND_NAME):
            lookups.append(command)
        return send(self, command, *args, **kwargs)

    monkeypatch.setattr(GatewayClient, "send_command", counting)
    assert math.abs(-3) == 3
    first = len(lookups)
    assert first <= 1  # looked up now, unless an earlier call in this process did
    assert math.abs(-4) == 4 and math.abs(-5) == 5
    assert len(lookups) == first  # not looked up again

    assert math.E == math.E
    assert len(lookups) == first + 2  # a field's value is read each time, as py4j reads it
