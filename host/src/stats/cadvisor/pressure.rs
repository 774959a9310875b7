//! cAdvisor's pressure series: `container_pressure_<resource>_waiting_seconds_total` (PSI's
//! `some` total) and `..._stalled_seconds_total` (its `full` total) for cpu, memory and io,
//! named and described as cAdvisor writes them.

use crate::stats::psi::Pressure;
use crate::stats::text_format::{Family, Kind, LabelSet, Series};

/// The six families, as (waiting, stalled) pairs for cpu, memory and io.
pub(super) fn families() -> [(Family, Family); 3] {
    let pair = |waiting, waiting_help, stalled, stalled_help| {
        (
            Family::new(waiting, waiting_help, Kind::Counter),
            Family::new(stalled, stalled_help, Kind::Counter),
        )
    };
    [
        pair(
            "container_pressure_cpu_waiting_seconds_total",
            "Total time duration tasks in the container have waited due to CPU congestion.",
            "container_pressure_cpu_stalled_seconds_total",
            "Total time duration no tasks in the container could make progress due to CPU congestion.",
        ),
        pair(
            "container_pressure_memory_waiting_seconds_total",
            "Total time duration tasks in the container have waited due to memory congestion.",
            "container_pressure_memory_stalled_seconds_total",
            "Total time duration no tasks in the container could make progress due to memory congestion.",
        ),
        pair(
            "container_pressure_io_waiting_seconds_total",
            "Total time duration tasks in the container have waited due to IO congestion.",
            "container_pressure_io_stalled_seconds_total",
            "Total time duration no tasks in the container could make progress due to IO congestion.",
        ),
    ]
}

/// Adds one subject's readings (those it has) under `labels`, in seconds (the totals are
/// microseconds, as cAdvisor's `asMicrosecondsToSeconds` reads them).
pub(super) fn add(
    families: &mut [(Family, Family); 3],
    pressure: &Pressure,
    labels: &LabelSet,
    at_ms: i64,
) {
    for ((waiting, stalled), (_, reading)) in families.iter_mut().zip(pressure.each()) {
        let Some(reading) = reading else { continue };
        for (family, data) in [(waiting, &reading.some), (stalled, &reading.full)] {
            family.series.push(Series {
                labels: labels.clone(),
                value: data.total as f64 / 1e6,
                timestamp_ms: Some(at_ms),
            });
        }
    }
}
