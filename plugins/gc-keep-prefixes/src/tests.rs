use wasmlet_plugin_sdk::fixtures::{GcCase, ImageFixture, MI, MINUTE_MS};
use wasmlet_plugin_sdk::GcStrategy;

use super::KeepPrefixes;

fn strategy(config: &str) -> KeepPrefixes {
    let mut s = KeepPrefixes::default();
    s.configure(config).unwrap();
    s
}

fn case(bytes_to_free: u64) -> GcCase {
    GcCase::new()
        .bytes_to_free(bytes_to_free)
        .image(ImageFixture::new("docker.io/library/busybox:1.36").size(5 * MI))
        .image(ImageFixture::new("registry.local/platform/agent:2").size(900 * MI))
        .image(ImageFixture::new("docker.io/library/nginx:1.25").size(200 * MI))
        .image(
            ImageFixture::new("ghcr.io/acme/app:v3")
                .size(400 * MI)
                .tag("registry.local/platform/app:v3"),
        )
        .image(
            ImageFixture::new("docker.io/library/postgres:16")
                .size(600 * MI)
                .in_use(),
        )
}

#[test]
fn kept_prefixes_never_go_and_the_largest_goes_first() {
    let s = strategy(r#"{"keepPrefixes": ["registry.local/platform/"]}"#);
    assert_eq!(
        case(150 * MI).plan_image_tags(&s).unwrap(),
        ["docker.io/library/nginx:1.25"]
    );
    assert_eq!(
        case(10_000 * MI).plan_image_tags(&s).unwrap(),
        [
            "docker.io/library/nginx:1.25",
            "docker.io/library/busybox:1.36"
        ]
    );
}

#[test]
fn without_prefixes_everything_unused_is_fair_game() {
    let s = strategy("{}");
    assert_eq!(
        case(1000 * MI).plan_image_tags(&s).unwrap(),
        ["registry.local/platform/agent:2", "ghcr.io/acme/app:v3"]
    );
}

#[test]
fn images_past_max_age_go_even_without_pressure() {
    let s = strategy(r#"{"keepPrefixes": ["registry.local/"]}"#);
    let mut c = GcCase::new()
        .image(ImageFixture::new("old:1").size(MI).used_minutes_ago(600))
        .image(
            ImageFixture::new("registry.local/old:1")
                .size(MI)
                .used_minutes_ago(600),
        )
        .image(ImageFixture::new("recent:1").size(MI).used_minutes_ago(5));
    c.disk.max_age_ms = 60 * MINUTE_MS;
    assert_eq!(c.plan_image_tags(&s).unwrap(), ["old:1"]);
}

#[test]
fn empty_prefix_is_refused() {
    assert!(KeepPrefixes::default()
        .configure(r#"{"keepPrefixes": [""]}"#)
        .is_err());
}

#[test]
fn containers_use_the_upstream_default() {
    let c = GcCase::new().dead(0, 0, 1).dead(0, 1, 2);
    assert_eq!(c.plan_containers(&strategy("{}")).unwrap(), vec![1]);
}

#[test]
fn prefixes_come_from_the_file_too_and_are_re_read_before_each_plan() {
    let file = std::env::temp_dir().join(format!("gc-keep-prefixes-{}", std::process::id()));
    std::fs::write(&file, "# platform images\nregistry.local/platform/\n\n").unwrap();
    let s = strategy(&format!(r#"{{"keepPrefixesFile": "{}"}}"#, file.display()));
    assert_eq!(
        case(1000 * MI).plan_image_tags(&s).unwrap(),
        [
            "docker.io/library/nginx:1.25",
            "docker.io/library/busybox:1.36"
        ]
    );
    // Edited: nothing is kept any more, so the largest unused image goes first.
    std::fs::write(&file, "# nothing kept\n").unwrap();
    assert_eq!(
        case(100 * MI).plan_image_tags(&s).unwrap(),
        ["registry.local/platform/agent:2"]
    );
    // Gone: the prefixes last read at configure time still hold.
    std::fs::remove_file(&file).unwrap();
    assert_eq!(
        case(150 * MI).plan_image_tags(&s).unwrap(),
        ["docker.io/library/nginx:1.25"]
    );
    let err = KeepPrefixes::default()
        .configure(&format!(r#"{{"keepPrefixesFile": "{}"}}"#, file.display()))
        .unwrap_err();
    assert!(err.contains("capabilities.directories"), "{err}");
}
