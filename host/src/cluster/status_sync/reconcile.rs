//! Whether the API server's copy of a pod status still says what the node computed, in the
//! fields the node owns (upstream's `needsReconcile` and `isPodStatusByKubeletEqual`), and the
//! patch that makes it so: a two-way diff of the API's copy and the node's status over what the
//! node owns (upstream's `mergePodStatus` then `PatchPodStatus`), so a field the node cleared is
//! removed, while conditions of other writers (`DisruptionTarget`, readiness gates, ...) and
//! the fields the node never writes (`nominatedNodeName`, `resourceClaimStatuses`) are left
//! alone.

use serde_json::{Map, Value};

/// Status fields the node writes whole.
const OWNED_FIELDS: [&str; 12] = [
    "phase",
    "reason",
    "message",
    "hostIP",
    "hostIPs",
    "podIP",
    "podIPs",
    "startTime",
    "qosClass",
    "initContainerStatuses",
    "containerStatuses",
    "ephemeralContainerStatuses",
];
/// Fields of an owned condition the node removes even when it does not know the API's copy
/// yet: a `Ready` that turned true must lose the reason it had while false.
const CLEARED_FIELDS: [&str; 2] = ["reason", "message"];
/// The pod conditions the node owns.
const OWNED_CONDITIONS: [&str; 6] = [
    "PodReadyToStartContainers",
    "Initialized",
    "Ready",
    "ContainersReady",
    "PodResizePending",
    "PodResizeInProgress",
];

fn field<'a>(status: &'a Value, name: &str) -> Option<&'a Value> {
    status.get(name).filter(|v| !v.is_null())
}

fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

/// Whether `api` (the API server's status, as JSON) differs from `ours` in what the node owns:
/// another writer changed it, and the node's status must be written again.
pub fn differs(api: &Value, ours: &Value) -> bool {
    OWNED_FIELDS
        .iter()
        .any(|name| field(api, name) != field(ours, name))
        || OWNED_CONDITIONS
            .iter()
            .any(|type_| condition(api, type_) != condition(ours, type_))
}

/// The status to patch: `ours`, plus the two-way diff against `api` (the API server's copy,
/// when known) over what the node owns. A strategic-merge patch removes a field set to null
/// and merges conditions by type, each field on its own, so:
/// - an owned top-level field `api` holds and `ours` lacks is sent as `null`;
/// - in each owned condition `ours` sends, a field `api`'s condition of that type holds and
///   `ours` lacks is `null`, and so are `reason` and `message` when `ours` has none (even
///   without `api`: a `Ready` that turned true loses the reason it had while false);
/// - an owned condition `api` holds and `ours` lacks is removed with `$patch: delete`;
/// - everything else `api` holds (others' conditions and fields) is not named, so it stays.
pub fn patch(ours: &Value, api: Option<&Value>) -> Value {
    let mut out = match ours {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    if let Some(Value::Array(conditions)) = out.get_mut("conditions") {
        for sent in conditions.iter_mut().filter_map(Value::as_object_mut) {
            let Some(type_) = sent
                .get("type")
                .and_then(Value::as_str)
                .filter(|t| OWNED_CONDITIONS.contains(t))
                .map(str::to_string)
            else {
                continue;
            };
            for name in CLEARED_FIELDS {
                sent.entry(name).or_insert(Value::Null);
            }
            let held = api
                .and_then(|api| condition(api, &type_))
                .and_then(Value::as_object);
            for (name, value) in held.into_iter().flatten() {
                if !value.is_null() {
                    sent.entry(name.clone()).or_insert(Value::Null);
                }
            }
        }
    }
    if let Some(api) = api {
        let gone: Vec<Value> = OWNED_CONDITIONS
            .iter()
            .filter(|t| condition(api, t).is_some() && condition(ours, t).is_none())
            .map(|t| serde_json::json!({"type": t, "$patch": "delete"}))
            .collect();
        if !gone.is_empty() {
            if let Value::Array(conditions) = out
                .entry("conditions")
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                conditions.extend(gone);
            }
        }
        for name in OWNED_FIELDS {
            if field(api, name).is_some() && field(ours, name).is_none() {
                out.insert(name.to_string(), Value::Null);
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours() -> Value {
        json!({
            "phase": "Running",
            "podIP": "10.0.0.5",
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Initialized", "status": "True"}
            ],
            "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0}]
        })
    }

    #[test]
    fn what_others_own_never_needs_a_rewrite() {
        let mut api = ours();
        api["conditions"]
            .as_array_mut()
            .expect("conditions")
            .push(json!({"type": "DisruptionTarget", "status": "True"}));
        api["nominatedNodeName"] = json!("other");
        assert!(!differs(&api, &ours()));
    }

    /// One change made to the API's copy.
    type Change = fn(&mut Value);

    #[test]
    fn a_changed_owned_field_or_condition_needs_one() {
        let cases: [(&str, Change); 4] = [
            ("phase", |s| s["phase"] = json!("Failed")),
            ("ready condition", |s| {
                s["conditions"][0]["status"] = json!("False")
            }),
            ("container statuses", |s| {
                s["containerStatuses"][0]["ready"] = json!(false)
            }),
            ("a message someone added", |s| s["message"] = json!("x")),
        ];
        for (what, change) in cases {
            let mut api = ours();
            change(&mut api);
            assert!(differs(&api, &ours()), "{what}");
        }
    }

    #[test]
    fn the_patch_clears_what_the_node_cleared() {
        let mut api = ours();
        api["message"] = json!("old");
        api["reason"] = json!("Evicted");
        let patch = patch(&ours(), Some(&api));
        assert_eq!(patch["message"], Value::Null);
        assert_eq!(patch["reason"], Value::Null);
        assert!(patch.as_object().is_some_and(|m| m.contains_key("message")));
        assert_eq!(patch["phase"], json!("Running"));
        assert_eq!(
            patch["conditions"][0],
            json!({"type": "Ready", "status": "True", "reason": null, "message": null}),
            "an owned condition's reason and message go when the node has none"
        );
        let without_api = super::patch(&ours(), None);
        assert!(!without_api
            .as_object()
            .is_some_and(|m| m.contains_key("message")));
    }

    #[test]
    fn an_owned_condition_the_node_dropped_is_deleted_and_others_are_kept() {
        let mut api = ours();
        let conditions = api["conditions"].as_array_mut().expect("conditions");
        conditions
            .push(json!({"type": "PodResizeInProgress", "status": "True", "reason": "Error"}));
        conditions.push(json!({"type": "DisruptionTarget", "status": "True"}));
        assert!(differs(&api, &ours()));
        let patch = patch(&ours(), Some(&api));
        let sent = patch["conditions"].as_array().expect("conditions");
        assert!(sent.contains(&json!({"type": "PodResizeInProgress", "$patch": "delete"})));
        assert!(!sent.iter().any(|c| c["type"] == "DisruptionTarget"));
    }
    /// What the patch holds at a JSON pointer.
    #[derive(Debug)]
    enum Sent {
        /// `null`: the field is removed from the API's copy.
        Cleared,
        /// The node's value.
        AsOurs,
        /// Nothing: the API's copy keeps what it holds.
        Untouched,
    }

    #[test]
    fn the_patch_is_a_two_way_diff_over_what_the_node_owns() {
        use Sent::*;
        // (case, the API's copy, the node's status, what the patch holds where)
        type Case = (&'static str, Value, Value, Vec<(&'static str, Sent)>);
        let cases: Vec<Case> = vec![
            (
                "an owned field the node no longer computes is cleared",
                json!({"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}],
                       "ephemeralContainerStatuses": [{"name": "d"}]}),
                json!({"phase": "Running"}),
                vec![
                    ("/podIPs", Cleared),
                    ("/ephemeralContainerStatuses", Cleared),
                    ("/phase", AsOurs),
                ],
            ),
            (
                "fields others own are never named",
                json!({"phase": "Running", "nominatedNodeName": "n",
                       "resourceClaimStatuses": [{"name": "c"}]}),
                json!({"phase": "Running"}),
                vec![
                    ("/nominatedNodeName", Untouched),
                    ("/resourceClaimStatuses", Untouched),
                ],
            ),
            (
                "a field of an owned condition the node dropped is cleared",
                json!({"conditions": [{"type": "Ready", "status": "False",
                       "lastProbeTime": "2026-01-01T00:00:00Z", "reason": "ContainersNotReady"}]}),
                json!({"conditions": [{"type": "Ready", "status": "True"}]}),
                vec![
                    ("/conditions/0/lastProbeTime", Cleared),
                    ("/conditions/0/reason", Cleared),
                    ("/conditions/0/status", AsOurs),
                ],
            ),
            (
                "a condition another writer owns keeps the fields the node does not send",
                json!({"conditions": [{"type": "example.com/gate", "status": "True",
                       "reason": "Set"}]}),
                json!({"conditions": [{"type": "example.com/gate", "status": "True"}]}),
                vec![
                    ("/conditions/0/reason", Untouched),
                    ("/conditions/0/status", AsOurs),
                ],
            ),
            (
                "an owned field both hold is sent as the node has it",
                json!({"phase": "Pending", "qosClass": "BestEffort"}),
                json!({"phase": "Running", "qosClass": "BestEffort"}),
                vec![("/phase", AsOurs), ("/qosClass", AsOurs)],
            ),
        ];
        for (case, api, ours, expected) in cases {
            let sent = patch(&ours, Some(&api));
            for (pointer, want) in expected {
                let got = sent.pointer(pointer);
                let ok = match want {
                    Cleared => got == Some(&Value::Null),
                    AsOurs => got.is_some() && got == ours.pointer(pointer),
                    Untouched => got.is_none(),
                };
                assert!(ok, "{case}: {pointer} should be {want:?} in {sent}");
            }
        }
    }
}
