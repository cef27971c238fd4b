"""Stand-ins for delta-spark, PySpark and py4j exceptions, duck-typed like the real ones."""

from __future__ import annotations

from typing import Any


def delta_class(name: str, base: type[Exception] = Exception) -> type[Exception]:
    """Make an exception class named like one of Delta's Python conflict classes."""
    return type(name, (base,), {})


class FakeJavaClass:
    def __init__(self, name: str) -> None:
        self._name = name

    def getName(self) -> str:
        return self._name


class FakeJavaThrowable:
    """A py4j JavaObject proxy for a java.lang.Throwable."""

    def __init__(
        self,
        class_name: str,
        message: str = "",
        *,
        error_class: str | None = None,
        cause: FakeJavaThrowable | None = None,
    ) -> None:
        self.class_name = class_name
        self.message = message
        self.error_class = error_class
        self.cause: FakeJavaThrowable | None = cause

    def getClass(self) -> FakeJavaClass:
        return FakeJavaClass(self.class_name)

    def getMessage(self) -> str:
        return self.message

    def getErrorClass(self) -> str | None:
        return self.error_class

    def getCause(self) -> FakeJavaThrowable | None:
        return self.cause

    def toString(self) -> str:
        return f"{self.class_name}: {self.message}"


class DeadGatewayThrowable:
    """A JVM proxy whose gateway is gone: every call raises."""

    def __getattr__(self, name: str) -> Any:
        def fail(*_: object) -> None:
            raise ConnectionError("py4j gateway is closed")

        return fail


class Py4JJavaError(Exception):
    """Shaped like py4j.protocol.Py4JJavaError: ``java_exception`` plus a JVM-rendered ``str``."""

    def __init__(self, msg: str, java_exception: Any) -> None:
        super().__init__(msg)
        self.java_exception = java_exception
        self.msg = msg

    def __str__(self) -> str:
        try:
            return f"{self.msg}.\n: {self.java_exception.toString()}"
        except Exception:
            return self.msg


class CapturedException(Exception):
    """Shaped like pyspark.errors.exceptions.captured.CapturedException (4.x: getCondition)."""

    def __init__(self, desc: str, condition: str | None = None, cause: BaseException | None = None) -> None:
        super().__init__(desc)
        self._condition = condition
        self._cause = cause

    def getCondition(self) -> str | None:
        return self._condition


class LegacyCapturedException(Exception):
    """PySpark 3.x: only getErrorClass."""

    def __init__(self, desc: str, error_class: str | None = None) -> None:
        super().__init__(desc)
        self._error_class = error_class

    def getErrorClass(self) -> str | None:
        return self._error_class


class BrokenStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() failed")
