//! Log lines in the shape of upstream's `k8s.io/component-base/logs/json` (zap's JSON
//! encoder behind klog): `{"ts":<ms since the epoch, float>,"caller":"dir/file.rs:line",
//! "msg":"...","v":N,<span fields>,<event fields>,"err":"..."}`, one object per line.
//! Log pipelines that parse the kubelet's JSON read these unchanged.

use std::fmt::{self, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The event format of `--logging-format=json`; use it with [`JsonFields`] for the spans.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonFormat;

/// Span fields kept as a JSON fragment (`,"pod":"a_b","uid":"..."`), so each event writes
/// its spans' fields as keys of its own object without parsing them again.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonFields;

impl<'writer> FormatFields<'writer> for JsonFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'writer>,
        fields: R,
    ) -> fmt::Result {
        let mut visitor = FieldVisitor::span();
        fields.record(&mut visitor);
        visitor.result?;
        writer.write_str(&visitor.fields)
    }

    fn add_fields(
        &self,
        current: &'writer mut FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> fmt::Result {
        let mut visitor = FieldVisitor::span();
        fields.record(&mut visitor);
        visitor.result?;
        current.fields.push_str(&visitor.fields);
        Ok(())
    }
}

impl<S> FormatEvent<S, JsonFields> for JsonFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let metadata = event.metadata();
        let mut visitor = FieldVisitor::event();
        event.record(&mut visitor);
        visitor.result?;
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_nanos() as f64 / 1e6);
        write!(writer, "{{\"ts\":{millis},\"caller\":")?;
        let file = visitor.log_file.as_deref().or(metadata.file());
        let line = visitor.log_line.or(metadata.line().map(u64::from));
        let caller = match (file, line) {
            (Some(file), Some(line)) => format!("{}:{line}", short_path(file)),
            (Some(file), None) => short_path(file).to_string(),
            _ => metadata.target().to_string(),
        };
        write_string(&mut writer, &caller)?;
        writer.write_str(",\"msg\":")?;
        write_string(&mut writer, &visitor.message)?;
        if let Some(v) = super::verbosity_of(*metadata.level()) {
            write!(writer, ",\"v\":{v}")?;
        }
        // Outermost span first, as klog's WithValues come before the call's own pairs.
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                if let Some(fields) = span.extensions().get::<FormattedFields<JsonFields>>() {
                    writer.write_str(&fields.fields)?;
                }
            }
        }
        writer.write_str(&visitor.fields)?;
        if let Some(err) = &visitor.err {
            writer.write_str(",\"err\":")?;
            write_string(&mut writer, err)?;
        }
        writer.write_str("}\n")
    }
}

/// The last directory and the file name, as zap's `ShortCallerEncoder` writes `caller`.
fn short_path(file: &str) -> &str {
    let mut slashes = file.rmatch_indices(['/', '\\']).map(|(i, _)| i);
    match (slashes.next(), slashes.next()) {
        (Some(_), Some(second)) => &file[second + 1..],
        _ => file,
    }
}

/// Writes `text` as a JSON string (quoted and escaped by serde_json).
fn write_string(out: &mut dyn fmt::Write, text: &str) -> fmt::Result {
    serde_json::to_writer(FmtWriter(out), text).map_err(|_| fmt::Error)
}

/// serde_json writes bytes; the formatter's writer takes `str`. serde_json splits a string
/// only at ASCII escapes, so every chunk is whole UTF-8.
struct FmtWriter<'a>(&'a mut dyn fmt::Write);

impl std::io::Write for FmtWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        self.0.write_str(text).map_err(std::io::Error::other)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Collects fields as `,"key":value` pairs; for an event it takes `message` as `msg`,
/// `error`/`err` as `err` (upstream's key for the error of `ErrorS`) and the `log.*` fields
/// of records bridged from the `log` crate as the caller.
struct FieldVisitor {
    event: bool,
    fields: String,
    message: String,
    err: Option<String>,
    log_file: Option<String>,
    log_line: Option<u64>,
    result: fmt::Result,
}

impl FieldVisitor {
    fn event() -> Self {
        Self {
            event: true,
            fields: String::new(),
            message: String::new(),
            err: None,
            log_file: None,
            log_line: None,
            result: Ok(()),
        }
    }

    fn span() -> Self {
        Self {
            event: false,
            ..Self::event()
        }
    }

    /// Takes the fields an event treats apart; true when `field` was one of them.
    fn special(&mut self, field: &Field, text: impl FnOnce() -> String) -> bool {
        if !self.event {
            return false;
        }
        match field.name() {
            "message" => self.message = text(),
            "error" | "err" => self.err = Some(text()),
            "log.file" => self.log_file = Some(text()),
            "log.target" | "log.module_path" | "log.line" => {}
            _ => return false,
        }
        true
    }

    fn key(&mut self, field: &Field) {
        self.fields.push(',');
        if self.result.is_ok() {
            self.result = write_string(&mut self.fields, field.name());
        }
        self.fields.push(':');
    }

    fn string(&mut self, field: &Field, text: &str) {
        self.key(field);
        if self.result.is_ok() {
            self.result = write_string(&mut self.fields, text);
        }
    }

    fn number(&mut self, field: &Field, number: impl fmt::Display) {
        self.key(field);
        if self.result.is_ok() {
            self.result = write!(self.fields, "{number}");
        }
    }
}

impl Visit for FieldVisitor {
    fn record_f64(&mut self, field: &Field, value: f64) {
        if value.is_finite() {
            self.number(field, value);
        } else {
            self.string(field, &value.to_string());
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.number(field, value);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.event && field.name() == "log.line" {
            self.log_line = Some(value);
            return;
        }
        self.number(field, value);
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.number(field, value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if !self.special(field, || value.to_string()) {
            self.string(field, value);
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if !self.special(field, || value.to_string()) {
            self.string(field, &value.to_string());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if !self.special(field, || format!("{value:?}")) {
            self.string(field, &format!("{value:?}"));
        }
    }
}
