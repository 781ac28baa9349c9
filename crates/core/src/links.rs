//! Which links Mimesis opens (issue 16 §7): a link in a transcript or a terminal is
//! untrusted text, opened by the system's browser only when it is a plain web address.
//! Everything else (`javascript:`, `file:`, `data:`, custom schemes that start programs)
//! stays text.

/// The longest address opened.
pub const MAX_URL: usize = 2048;

/// `url` when the system's browser may open it: `http://` or `https://`, with a host, no
/// spaces or control characters, at most [`MAX_URL`] bytes. Otherwise why not, in a sentence.
pub fn openable(url: &str) -> Result<&str, LinkRefused> {
    if url.len() > MAX_URL {
        return Err(LinkRefused::TooLong);
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(LinkRefused::Spaces);
    }
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &url[8..]
    } else if lower.starts_with("http://") {
        &url[7..]
    } else {
        return Err(LinkRefused::NotWeb);
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    if host.is_empty() || host.starts_with(':') {
        return Err(LinkRefused::NoHost);
    }
    Ok(url)
}

/// Why a link is not opened: the sentence is the Display.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkRefused {
    #[error("that address is longer than {MAX_URL} characters")]
    TooLong,
    #[error("that address holds spaces or control characters")]
    Spaces,
    #[error("only web addresses (http:// or https://) are opened")]
    NotWeb,
    #[error("that address has no host")]
    NoHost,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_web_addresses_open() {
        for ok in ["https://example.com", "http://localhost:3000/x?y=1#z", "HTTPS://Docs.rs/tokio", "https://u@h.io/p"]
        {
            assert_eq!(openable(ok), Ok(ok), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,<script>x</script>",
            "vscode://file/x",
            "https://",
            "https:///path",
            "http://:80",
            "https://exa mple.com",
            "https://example.com/\n",
            "//example.com",
            "example.com",
            "",
        ] {
            assert!(openable(bad).is_err(), "{bad:?} would open");
        }
        assert!(openable(&format!("https://e.com/{}", "a".repeat(MAX_URL))).is_err());
    }
}
