use super::*;
use crate::objects::fake::FakeObjects;
use crate::objects::Standalone;
use k8s_openapi::api::core::v1::{
    ConfigMapEnvSource, ConfigMapKeySelector, EnvFromSource, EnvVar, EnvVarSource,
    ObjectFieldSelector, PodSpec, SecretEnvSource, SecretKeySelector, ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

#[test]
fn expansion_rules() {
    let vars = HashMap::from([("A".to_string(), "x".to_string())]);
    assert_eq!(expand("$(A)-$(B)", &vars), "x-$(B)");
    assert_eq!(expand("$$(A) $ $(A", &vars), "$(A) $ $(A");
}

fn pod(namespace: &str, links: Option<bool>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web-node".into()),
            namespace: Some(namespace.into()),
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some("node".into()),
            enable_service_links: links,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn literal(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..Default::default()
    }
}

fn from(name: &str, source: EnvVarSource) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(source),
        ..Default::default()
    }
}

fn config_map_key(name: &str, key: &str, optional: Option<bool>) -> EnvVarSource {
    EnvVarSource {
        config_map_key_ref: Some(ConfigMapKeySelector {
            name: name.into(),
            key: key.into(),
            optional,
        }),
        ..Default::default()
    }
}

fn secret_key(name: &str, key: &str, optional: Option<bool>) -> EnvVarSource {
    EnvVarSource {
        secret_key_ref: Some(SecretKeySelector {
            name: name.into(),
            key: key.into(),
            optional,
        }),
        ..Default::default()
    }
}

fn service(namespace: &str, name: &str, ip: &str, ports: &[(Option<&str>, i32, &str)]) -> Service {
    Service {
        metadata: ObjectMeta {
            namespace: Some(namespace.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: Some(ip.into()),
            ports: Some(
                ports
                    .iter()
                    .map(|(name, port, protocol)| ServicePort {
                        name: name.map(str::to_string),
                        port: *port,
                        protocol: Some(protocol.to_string()),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn kubernetes_service() -> Service {
    service(
        "default",
        "kubernetes",
        "10.96.0.1",
        &[(Some("https"), 443, "TCP")],
    )
}

fn get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn names(env: &[(String, String)]) -> Vec<&str> {
    env.iter().map(|(n, _)| n.as_str()).collect()
}

#[tokio::test]
async fn field_refs_and_literals() {
    let pod = pod("default", None);
    let field = |name: &str, path: &str| {
        from(
            name,
            EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: path.into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
    };
    let container = Container {
        name: "c".into(),
        env: Some(vec![
            field("POD", "metadata.name"),
            field("IP", "status.podIP"),
            field("APP", "metadata.labels['app']"),
            literal("GREETING", "hi $(POD) at $(IP)"),
        ]),
        ..Default::default()
    };
    let facts = PodFacts {
        pod_ip: "10.88.0.5".into(),
        ..Default::default()
    };
    let env = resolve(&pod, &container, &facts, &Standalone)
        .await
        .unwrap();
    assert_eq!(env[0], ("POD".into(), "web-node".into()));
    assert_eq!(env[2], ("APP".into(), "web".into()));
    assert_eq!(
        env[3],
        ("GREETING".into(), "hi web-node at 10.88.0.5".into())
    );
    assert_eq!(env.len(), 4, "standalone has no service links");
}

#[tokio::test]
async fn env_beats_env_from_beats_services() {
    let objects = FakeObjects::default();
    objects.put_services(
        "shop",
        vec![service("shop", "db", "10.96.0.7", &[(None, 5432, "TCP")])],
    );
    objects.put_services("default", vec![kubernetes_service()]);
    objects.put_config_map(
        "shop",
        "settings",
        &[
            ("DB_SERVICE_HOST", "db.example"),
            ("MODE", "cm"),
            ("LEVEL", "info"),
        ],
    );
    objects.put_secret("shop", "creds", &[("MODE", b"secret"), ("TOKEN", b"t0k")]);
    let container = Container {
        name: "c".into(),
        env_from: Some(vec![
            EnvFromSource {
                config_map_ref: Some(ConfigMapEnvSource {
                    name: "settings".into(),
                    optional: None,
                }),
                ..Default::default()
            },
            EnvFromSource {
                secret_ref: Some(SecretEnvSource {
                    name: "creds".into(),
                    optional: None,
                }),
                ..Default::default()
            },
        ]),
        env: Some(vec![
            literal("LEVEL", "debug"),
            literal("URL", "$(DB_SERVICE_HOST):$(DB_SERVICE_PORT)/$(MODE)"),
        ]),
        ..Default::default()
    };
    let env = resolve(
        &pod("shop", None),
        &container,
        &PodFacts::default(),
        &objects,
    )
    .await
    .unwrap();
    assert_eq!(
        get(&env, "DB_SERVICE_HOST"),
        Some("db.example"),
        "envFrom over services"
    );
    assert_eq!(get(&env, "MODE"), Some("secret"), "a later envFrom wins");
    assert_eq!(get(&env, "LEVEL"), Some("debug"), "env over envFrom");
    assert_eq!(get(&env, "TOKEN"), Some("t0k"));
    assert_eq!(get(&env, "URL"), Some("db.example:5432/secret"));
    assert_eq!(get(&env, "KUBERNETES_SERVICE_HOST"), Some("10.96.0.1"));
    let order = names(&env);
    let position = |name: &str| order.iter().position(|n| *n == name).unwrap();
    assert!(position("KUBERNETES_SERVICE_HOST") < position("DB_SERVICE_HOST"));
    assert!(position("DB_SERVICE_HOST") < position("TOKEN"));
    assert!(position("TOKEN") < position("LEVEL"));
    assert_eq!(
        order.iter().filter(|n| **n == "MODE").count(),
        1,
        "each name once"
    );
}

#[tokio::test]
async fn env_from_prefix_and_unusable_keys() {
    let objects = FakeObjects::default();
    objects.put_config_map(
        "shop",
        "settings",
        &[
            ("host", "h"),
            ("1st", "one"),
            ("a=b", "broken"),
            ("dotted.key", "d"),
        ],
    );
    let container = Container {
        name: "c".into(),
        env_from: Some(vec![
            EnvFromSource {
                config_map_ref: Some(ConfigMapEnvSource {
                    name: "settings".into(),
                    optional: None,
                }),
                prefix: Some("APP_".into()),
                ..Default::default()
            },
            EnvFromSource {
                config_map_ref: Some(ConfigMapEnvSource {
                    name: "missing".into(),
                    optional: Some(true),
                }),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let env = resolve(
        &pod("shop", Some(false)),
        &container,
        &PodFacts::default(),
        &objects,
    )
    .await
    .unwrap();
    assert_eq!(
        names(&env),
        ["APP_1st", "APP_dotted.key", "APP_host"],
        "prefixed in key order; a key with '=' cannot be a variable"
    );
}

#[tokio::test]
async fn key_refs_and_their_errors() {
    let objects = FakeObjects::default();
    objects.put_config_map("shop", "settings", &[("level", "info")]);
    objects.put_secret("shop", "creds", &[("password", &[b'p', 0xff])]);
    let container = |env: Vec<EnvVar>| Container {
        name: "c".into(),
        env: Some(env),
        ..Default::default()
    };
    let run = |c: Container| {
        let objects = &objects;
        async move { resolve(&pod("shop", Some(false)), &c, &PodFacts::default(), objects).await }
    };
    let env = run(container(vec![
        from("LEVEL", config_map_key("settings", "level", None)),
        from("PASSWORD", secret_key("creds", "password", None)),
        from("MAYBE", config_map_key("settings", "absent", Some(true))),
        from("NOWHERE", secret_key("nowhere", "x", Some(true))),
    ]))
    .await
    .unwrap();
    assert_eq!(get(&env, "LEVEL"), Some("info"));
    assert_eq!(get(&env, "PASSWORD"), Some("p\u{fffd}"));
    assert_eq!(
        get(&env, "MAYBE"),
        None,
        "an optional missing key sets nothing"
    );
    assert_eq!(get(&env, "NOWHERE"), None);

    let error = |env: Vec<EnvVar>| {
        let c = container(env);
        async move { run(c).await.unwrap_err().to_string() }
    };
    assert_eq!(
        error(vec![from("X", config_map_key("absent", "k", None))]).await,
        r#"configmap "absent" not found"#
    );
    assert_eq!(
        error(vec![from("X", config_map_key("settings", "k", None))]).await,
        "couldn't find key k in ConfigMap shop/settings"
    );
    assert_eq!(
        error(vec![from("X", secret_key("creds", "user", None))]).await,
        "couldn't find key user in Secret shop/creds"
    );
    let env_from_missing = Container {
        name: "c".into(),
        env_from: Some(vec![EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: "gone".into(),
                optional: None,
            }),
            ..Default::default()
        }]),
        ..Default::default()
    };
    assert_eq!(
        run(env_from_missing).await.unwrap_err().to_string(),
        r#"secret "gone" not found"#
    );
}

#[tokio::test]
async fn service_links_follow_enable_service_links() {
    let objects = FakeObjects::default();
    objects.put_services("default", vec![kubernetes_service()]);
    objects.put_services(
        "shop",
        vec![
            service(
                "shop",
                "web-front",
                "10.96.3.4",
                &[(Some("http"), 80, "TCP")],
            ),
            service("shop", "headless", "None", &[(None, 80, "TCP")]),
        ],
    );
    let container = Container::default();
    let with = resolve(
        &pod("shop", None),
        &container,
        &PodFacts::default(),
        &objects,
    )
    .await
    .unwrap();
    assert_eq!(get(&with, "WEB_FRONT_SERVICE_HOST"), Some("10.96.3.4"));
    assert!(get(&with, "HEADLESS_SERVICE_HOST").is_none());
    let without = resolve(
        &pod("shop", Some(false)),
        &container,
        &PodFacts::default(),
        &objects,
    )
    .await
    .unwrap();
    assert!(get(&without, "WEB_FRONT_SERVICE_HOST").is_none());
    assert_eq!(
        names(&without),
        [
            "KUBERNETES_SERVICE_HOST",
            "KUBERNETES_SERVICE_PORT",
            "KUBERNETES_SERVICE_PORT_HTTPS",
            "KUBERNETES_PORT",
            "KUBERNETES_PORT_443_TCP",
            "KUBERNETES_PORT_443_TCP_PROTO",
            "KUBERNETES_PORT_443_TCP_PORT",
            "KUBERNETES_PORT_443_TCP_ADDR",
        ],
        "the kubernetes Service always"
    );
    assert_eq!(
        get(&without, "KUBERNETES_PORT"),
        Some("tcp://10.96.0.1:443")
    );
}

#[test]
fn service_variable_names() {
    let env = service_env([&service(
        "shop",
        "my-db",
        "fd00::7",
        &[(Some("sql"), 5432, "TCP"), (Some("stats-udp"), 9125, "UDP")],
    )]);
    let expected = [
        ("MY_DB_SERVICE_HOST", "fd00::7"),
        ("MY_DB_SERVICE_PORT", "5432"),
        ("MY_DB_SERVICE_PORT_SQL", "5432"),
        ("MY_DB_SERVICE_PORT_STATS_UDP", "9125"),
        ("MY_DB_PORT", "tcp://[fd00::7]:5432"),
        ("MY_DB_PORT_5432_TCP", "tcp://[fd00::7]:5432"),
        ("MY_DB_PORT_5432_TCP_PROTO", "tcp"),
        ("MY_DB_PORT_5432_TCP_PORT", "5432"),
        ("MY_DB_PORT_5432_TCP_ADDR", "fd00::7"),
        ("MY_DB_PORT_9125_UDP", "udp://[fd00::7]:9125"),
        ("MY_DB_PORT_9125_UDP_PROTO", "udp"),
        ("MY_DB_PORT_9125_UDP_PORT", "9125"),
        ("MY_DB_PORT_9125_UDP_ADDR", "fd00::7"),
    ];
    let got: Vec<(&str, &str)> = env.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(got, expected);
    let no_ports = service("shop", "bare", "10.0.0.9", &[]);
    assert_eq!(
        service_env([&no_ports]),
        [("BARE_SERVICE_HOST".to_string(), "10.0.0.9".to_string())]
    );
}
