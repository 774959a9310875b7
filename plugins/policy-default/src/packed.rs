//! The wire form of `rank`'s pod list: each pod as [`POD_WORDS`] little-endian `u64` words
//! (`wit/types.wit`, `pod-info`). A flat `list<u64>` crosses the component boundary as one
//! block copy, where a `list<pod-info>` is lowered field by field; measured, that lowering was
//! most of a ranking call's cost. Host and SDK both use this module, so the layout has one
//! definition.
//!
//! | word | content |
//! |---|---|
//! | 0 | bits 0-31 `priority` (two's complement), 32-39 `qos` (0 guaranteed, 1 burstable, 2 best-effort), 40-47 `is-static`, 48-55 `is-critical`, 56-63 `has-stats` (each 0 or 1) |
//! | 1-8 | `memory-request-bytes`, `memory-usage-bytes`, `cpu-request-millis`, `cpu-usage-millis`, `disk-request-bytes`, `disk-usage-bytes`, `inodes-used`, `process-count` |
//! | 9 | bits 0-31 `container-count`, 32-63 `restart-count` |
//! | 10 | `start-time-unix-ms` |
//!
//! The little-endian bytes of these words are exactly [`PodInfo`]'s `#[repr(C)]` layout, so on
//! a little-endian machine (every WebAssembly guest, and x86-64 and arm64 hosts) neither side
//! copies: [`pods_as_words`] and [`pods_from_words`] reinterpret the memory in place, after
//! checking every enum and flag byte. [`pack_pods`] and [`unpack_pods`] are the same layout
//! built field by field, for other machines and as the reference the tests hold the fast path
//! to.

use std::borrow::Cow;

use zerocopy::{FromBytes, IntoBytes, TryFromBytes};

use crate::{PodInfo, QosClass};

/// Words per pod.
pub const POD_WORDS: usize = 11;

const _: () = assert!(std::mem::size_of::<PodInfo>() == POD_WORDS * 8);
const _: () = assert!(std::mem::align_of::<PodInfo>() == 8);

/// `pods` in the wire form: borrowed in place on a little-endian machine, packed otherwise.
pub fn pods_as_words(pods: &[PodInfo]) -> Cow<'_, [u64]> {
    if cfg!(target_endian = "little") {
        // Always succeeds: PodInfo is 88 bytes with 8-byte alignment (asserted above).
        if let Ok(words) = <[u64]>::ref_from_bytes(pods.as_bytes()) {
            return Cow::Borrowed(words);
        }
    }
    let mut words = Vec::new();
    pack_pods(pods, &mut words);
    Cow::Owned(words)
}

/// Reads pods from the wire form: in place on a little-endian machine, unpacked otherwise.
/// An incomplete pod, an unknown QoS or a flag that is neither 0 nor 1 is an error naming
/// the pod.
pub fn pods_from_words(words: &[u64]) -> Result<Cow<'_, [PodInfo]>, String> {
    if cfg!(target_endian = "little") && words.len().is_multiple_of(POD_WORDS) {
        if let Ok(pods) = <[PodInfo]>::try_ref_from_bytes(words.as_bytes()) {
            return Ok(Cow::Borrowed(pods));
        }
    }
    // The portable path, which also names what is wrong with a malformed list.
    unpack_pods(words).map(Cow::Owned)
}

/// Appends `pods` to `out` in the wire form, field by field.
pub fn pack_pods(pods: &[PodInfo], out: &mut Vec<u64>) {
    out.reserve(pods.len() * POD_WORDS);
    for p in pods {
        out.extend_from_slice(&[
            u64::from(p.priority as u32)
                | u64::from(p.qos as u8) << QOS_SHIFT
                | u64::from(p.is_static) << STATIC_SHIFT
                | u64::from(p.is_critical) << CRITICAL_SHIFT
                | u64::from(p.has_stats) << HAS_STATS_SHIFT,
            p.memory_request_bytes,
            p.memory_usage_bytes,
            p.cpu_request_millis,
            p.cpu_usage_millis,
            p.disk_request_bytes,
            p.disk_usage_bytes,
            p.inodes_used,
            p.process_count,
            u64::from(p.container_count) | u64::from(p.restart_count) << 32,
            p.start_time_unix_ms,
        ]);
    }
}

const QOS_SHIFT: u32 = 32;
const STATIC_SHIFT: u32 = 40;
const CRITICAL_SHIFT: u32 = 48;
const HAS_STATS_SHIFT: u32 = 56;

/// Reads pods back from the wire form field by field; an incomplete pod, an unknown QoS or a
/// flag that is neither 0 nor 1 is an error.
pub fn unpack_pods(words: &[u64]) -> Result<Vec<PodInfo>, String> {
    if !words.len().is_multiple_of(POD_WORDS) {
        return Err(format!(
            "pod list of {} words is not a multiple of {POD_WORDS}",
            words.len()
        ));
    }
    let (chunks, _) = words.as_chunks::<POD_WORDS>();
    let mut pods = Vec::with_capacity(chunks.len());
    for (i, w) in chunks.iter().enumerate() {
        let qos = match byte(w[0], QOS_SHIFT) {
            0 => QosClass::Guaranteed,
            1 => QosClass::Burstable,
            2 => QosClass::BestEffort,
            other => return Err(format!("pod {i} has unknown qos {other}")),
        };
        let flag = |name: &str, shift: u32| match byte(w[0], shift) {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(format!("pod {i} has {name} {other} (not 0 or 1)")),
        };
        pods.push(PodInfo {
            priority: w[0] as u32 as i32,
            qos,
            is_static: flag("is-static", STATIC_SHIFT)?,
            is_critical: flag("is-critical", CRITICAL_SHIFT)?,
            has_stats: flag("has-stats", HAS_STATS_SHIFT)?,
            memory_request_bytes: w[1],
            memory_usage_bytes: w[2],
            cpu_request_millis: w[3],
            cpu_usage_millis: w[4],
            disk_request_bytes: w[5],
            disk_usage_bytes: w[6],
            inodes_used: w[7],
            process_count: w[8],
            container_count: w[9] as u32,
            restart_count: (w[9] >> 32) as u32,
            start_time_unix_ms: w[10],
        });
    }
    Ok(pods)
}

/// The byte of `word` starting at bit `shift`.
fn byte(word: u64, shift: u32) -> u64 {
    (word >> shift) & 0xff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_survives_the_round_trip() {
        let pods = vec![
            PodInfo {
                priority: -5,
                qos: QosClass::Guaranteed,
                is_static: true,
                is_critical: false,
                has_stats: true,
                memory_request_bytes: 1,
                memory_usage_bytes: 2,
                cpu_request_millis: 3,
                cpu_usage_millis: 4,
                disk_request_bytes: 5,
                disk_usage_bytes: 6,
                inodes_used: 7,
                process_count: 8,
                container_count: u32::MAX,
                restart_count: 9,
                start_time_unix_ms: u64::MAX,
            },
            PodInfo {
                priority: 2_000_000_000,
                qos: QosClass::BestEffort,
                is_critical: true,
                ..PodInfo::default()
            },
            PodInfo {
                priority: i32::MIN,
                qos: QosClass::Burstable,
                ..PodInfo::default()
            },
        ];
        let mut words = Vec::new();
        pack_pods(&pods, &mut words);
        assert_eq!(words.len(), 3 * POD_WORDS);
        // The in-place view is the same layout as the field-by-field form, both ways.
        assert_eq!(pods_as_words(&pods).as_ref(), words.as_slice());
        assert_eq!(pods_from_words(&words).unwrap().as_ref(), pods.as_slice());
        assert!(matches!(pods_from_words(&words), Ok(Cow::Borrowed(_))));
        assert_eq!(unpack_pods(&words), Ok(pods));
    }

    #[test]
    fn malformed_lists_are_refused() {
        assert!(unpack_pods(&[0; POD_WORDS + 1]).is_err());
        let mut words = vec![0; POD_WORDS];
        words[0] = 7 << 32;
        assert_eq!(unpack_pods(&words), Err("pod 0 has unknown qos 7".into()));
        assert_eq!(
            pods_from_words(&words),
            Err("pod 0 has unknown qos 7".into())
        );
        let mut two = vec![0; 2 * POD_WORDS];
        two[POD_WORDS] = 2 << 48;
        assert_eq!(
            pods_from_words(&two),
            Err("pod 1 has is-critical 2 (not 0 or 1)".into())
        );
        assert!(pods_from_words(&[0; POD_WORDS + 1]).is_err());
        assert_eq!(unpack_pods(&[]), Ok(vec![]));
        assert_eq!(pods_from_words(&[]).unwrap().len(), 0);
    }
}
