//! Wall-clock times as the API (`metav1.Time`) and CRI (nanoseconds since the epoch) spell
//! them. A leaf: status, the runtime view, the plugin views and the eviction log share it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A wall-clock time as the API's `Time`.
pub fn api_time(at: SystemTime) -> Time {
    use k8s_openapi::jiff::Timestamp;
    let nanos = at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    Time(Timestamp::from_nanosecond(nanos).unwrap_or(Timestamp::UNIX_EPOCH))
}

/// The API's `Time` as a wall-clock time (`None` before the epoch).
pub fn system_time(at: &Time) -> Option<SystemTime> {
    let nanos = u64::try_from(at.0.as_nanosecond()).ok()?;
    Some(UNIX_EPOCH + Duration::from_nanos(nanos))
}

/// The current time as the API's `Time`.
pub fn now() -> Time {
    api_time(SystemTime::now())
}

/// CRI nanosecond timestamps as wall-clock times (`None` for unset).
pub fn time_of(nanos: i64) -> Option<SystemTime> {
    (nanos > 0).then(|| UNIX_EPOCH + Duration::from_nanos(nanos as u64))
}

/// A CRI nanosecond timestamp as the API's `Time` (`None` for unset).
pub fn api_time_of(nanos: i64) -> Option<Time> {
    time_of(nanos).map(api_time)
}
