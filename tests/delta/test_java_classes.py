"""The JVM classes zync calls Delta and Spark through (zync/spark_internals.py java_class): a class is
made once, and a static method of it is looked up in the JVM once, not at every call."""

from __future__ import annotations

from py4j import protocol
from py4j.java_gateway import GatewayClient

from zync.spark_internals import java_class


def test_a_static_method_is_looked_up_once_and_a_field_at_every_read(spark, monkeypatch):
    option = java_class(spark, "scala.Option")
    assert java_class(spark, "scala.Option") is option
    lookups: list[str] = []
    send = GatewayClient.send_command

    def counting(self, command, *args, **kwargs):
        if command.startswith(protocol.REFLECTION_COMMAND_NAME):
            lookups.append(command)
        return send(self, command, *args, **kwargs)

    monkeypatch.setattr(GatewayClient, "send_command", counting)
    assert option.empty().isEmpty()
    assert len(lookups) == 1
    assert option.apply(7).get() == 7 and option.empty().isEmpty()
    assert len(lookups) == 2  # `apply` looked up once; `empty` not again

    integer = java_class(spark, "java.lang.Integer")
    assert integer.MAX_VALUE == integer.MAX_VALUE == 2**31 - 1
    assert len(lookups) == 4  # a field's value is read each time, as py4j reads it
