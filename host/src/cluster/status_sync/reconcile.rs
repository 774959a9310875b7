//! Whether the API server's copy of a pod status still says what the node computed, in the
//! fields the node owns (upstream's `needsReconcile` and `isPodStatusByKubeletEqual`), and the
//! patch that makes it so: a field the node cleared is removed, conditions of other writers
//! (`DisruptionTarget`, readiness gates, ...) are left alone.

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
/// Fields the node removes from the API copy when its own status has none.
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

/// The status to patch: `ours`, with `null` for each field the node clears that `api` still
/// holds (a strategic-merge patch removes a field set to null). Conditions merge by type in
/// such a patch, each field on its own: an owned condition without a reason or message gets
/// `null` for it, so a `Ready` that turned true loses the reason it had while false.
pub fn patch(ours: &Value, api: Option<&Value>) -> Value {
    let mut out = match ours {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    if let Some(Value::Array(conditions)) = out.get_mut("conditions") {
        for condition in conditions.iter_mut().filter_map(Value::as_object_mut) {
            let owned = condition
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| OWNED_CONDITIONS.contains(&t));
            if owned {
                for name in CLEARED_FIELDS {
                    condition.entry(name).or_insert(Value::Null);
                }
            }
        }
    }
    if let Some(api) = api {
        // An owned condition the node no longer shows (a resize that finished) is removed
        // with a strategic-merge `$patch: delete` of its list element.
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
        for name in CLEARED_FIELDS {
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
}
