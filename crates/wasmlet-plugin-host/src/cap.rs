//! Caps on the strings a plugin hands the host. Everything a guest returns or logs (log
//! messages and fields, reasons, probe and admission messages, trap texts naming its
//! functions) is sized by the guest, so the host keeps a bounded prefix, cut on a character
//! boundary: a byte-index cut in the middle of a multibyte character would panic the host
//! (`String::truncate`) and take the node down with it.

/// Longest reason, probe message or admission message the host keeps from a plugin: what an
/// Event's message or a status message can usefully show.
pub const MAX_REASON_BYTES: usize = 1024;
/// Longest key of a `host.log` field.
pub const MAX_FIELD_KEY_BYTES: usize = 64;
/// Longest value of a `host.log` field.
pub const MAX_FIELD_VALUE_BYTES: usize = 256;
/// Most fields one `host.log` event keeps.
pub const MAX_LOG_FIELDS: usize = 16;

/// What a cut text ends with, so a reader knows there was more.
const ELLIPSIS: &str = "...";

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    // A UTF-8 character is at most 4 bytes: a boundary is at most 3 bytes before `max`.
    let cut = (max.saturating_sub(3)..=max)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    text.get(..cut).unwrap_or_default()
}

/// `text` within `max` bytes: unchanged when it fits, else its longest prefix that fits with
/// a trailing "..." (cut on a character boundary).
pub fn cap(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let kept = prefix(&text, max.saturating_sub(ELLIPSIS.len()));
    let mut capped = String::with_capacity(kept.len() + ELLIPSIS.len());
    capped.push_str(kept);
    if capped.len() + ELLIPSIS.len() <= max {
        capped.push_str(ELLIPSIS);
    }
    capped
}

/// A plugin's reason or message, within [`MAX_REASON_BYTES`].
pub fn reason(text: String) -> String {
    cap(text, MAX_REASON_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "a" then `n` two-byte characters: every even byte index past 0 is inside a character.
    fn multibyte(n: usize) -> String {
        format!("a{}", "é".repeat(n))
    }

    #[test]
    fn cuts_land_on_character_boundaries_at_every_size() {
        let texts = [
            multibyte(1500),
            "😀".repeat(700),
            format!("ab{}", "€".repeat(900)),
            "plain ascii".repeat(300),
        ];
        for text in &texts {
            for max in 0..text.len() + 2 {
                let p = prefix(text, max);
                assert!(p.len() <= max && text.starts_with(p), "{max}");
                assert!(
                    p.len() + 3 >= max.min(text.len()),
                    "no more than a character lost"
                );
                let c = cap(text.clone(), max);
                assert!(c.len() <= max || c == *text, "{max}: {}", c.len());
                if text.len() > max && max >= 3 {
                    assert!(c.ends_with("..."), "{max}");
                }
            }
        }
    }

    #[test]
    fn short_texts_are_kept_whole() {
        assert_eq!(cap("ok".into(), 1024), "ok");
        assert_eq!(reason(multibyte(10)), multibyte(10));
        assert_eq!(reason(multibyte(1500)).len(), 1024);
    }
}
