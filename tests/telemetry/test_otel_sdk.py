"""The real OpenTelemetry Python SDK exporting logs to a real ``threadline serve`` intake over OTLP/HTTP
(protobuf), as a customer would configure it: a ``LoggerProvider`` with a batch processor and the OTLP HTTP
exporter, fed by the standard ``logging`` module. What it sends is read back through ``GET /v1/logs``."""

from __future__ import annotations

import logging
import uuid
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler, ReadableLogRecord
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from tests.support import all_log_records, init_database, running_server


class RecordingExporter(OTLPLogExporter):
    """The OTLP exporter, keeping what each export reported (the batch processor only logs failures)."""

    def __init__(self, endpoint: str, headers: dict[str, str]) -> None:
        super().__init__(endpoint=endpoint, headers=headers, timeout=10)
        self.results: list[tuple[int, LogRecordExportResult]] = []

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        result = super().export(batch)
        self.results.append((len(batch), result))
        return result


def test_sdk_logs_arrive_with_level_resource_and_trace_context(empty_env: dict[str, str]) -> None:
    keys = init_database(empty_env)
    logger_name = f"checkout.payments.{uuid.uuid4().hex[:8]}"
    with running_server(empty_env) as server:
        exporter = RecordingExporter(f"{server.intake_url}/v1/logs", {"x-service-key": keys["publicKey"]})
        resource = Resource.create({"service.name": "checkout", "service.version": "1.4.2"})
        provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        with warnings.catch_warnings():  # the SDK's handler is deprecated in favour of a contrib package
            warnings.simplefilter("ignore", DeprecationWarning)
            handler = LoggingHandler(level=logging.DEBUG, logger_provider=provider)
        logger = logging.getLogger(logger_name)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addHandler(handler)
        tracer = TracerProvider(resource=resource).get_tracer("checkout")
        try:
            logger.debug("cache warmed")
            logger.info("order %s placed", "o-17", extra={"order_id": "o-17"})
            with tracer.start_as_current_span("charge") as span:
                logger.warning("card declined, retrying")
            try:
                raise ValueError("gateway timeout")
            except ValueError:
                logger.exception("payment failed")
            logger.critical("shutting down")
            assert provider.force_flush(10_000), "the SDK could not flush within 10 s"
        finally:
            logger.removeHandler(handler)
            provider.shutdown()

        assert exporter.results, "the exporter was never called"
        outcomes = [result for _, result in exporter.results]
        assert all(result is LogRecordExportResult.SUCCESS for result in outcomes), outcomes
        assert sum(count for count, _ in exporter.results) == 5
        records = all_log_records(server.api_url, keys["secretKey"])

    by_message = {r["message"]: r for r in records}
    assert len(records) == len(by_message) == 5, [r["message"] for r in records]
    levels = {message: r["level"] for message, r in by_message.items()}
    assert levels == {
        "cache warmed": "debug",
        "order o-17 placed": "info",
        "card declined, retrying": "warn",
        "payment failed": "error",
        "shutting down": "fatal",
    }
    for record in records:
        attributes = record["attributes"]
        assert record["kind"] == "log"
        assert attributes["resource.service.name"] == "checkout"
        assert attributes["resource.service.version"] == "1.4.2"
        assert attributes["scope.name"] == logger_name
        assert (
            attributes["code.function.name"]
            == test_sdk_logs_arrive_with_level_resource_and_trace_context.__name__
        )
        sent_at = datetime.fromisoformat(record["timestamp"])
        assert abs(sent_at - datetime.now(UTC)) < timedelta(minutes=1), record["timestamp"]

    assert by_message["order o-17 placed"]["attributes"]["order_id"] == "o-17"
    failed = by_message["payment failed"]["attributes"]
    assert failed["exception.type"] == "ValueError"
    assert failed["exception.message"] == "gateway timeout"
    assert "Traceback" in failed["exception.stacktrace"]

    context = span.get_span_context()
    traced = by_message["card declined, retrying"]
    assert traced["traceId"] == format(context.trace_id, "032x")
    assert traced["spanId"] == format(context.span_id, "016x")
    untraced = [r for r in records if r is not traced]
    assert all(r["traceId"] is None and r["spanId"] is None for r in untraced)
