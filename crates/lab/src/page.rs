//! The page and its assets, compiled into the binary: the lab works with
//! no network, and its Content-Security-Policy lets the page load nothing
//! from anywhere but the lab itself.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// One file of the page.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const ASSETS: &[Asset] = &[
    Asset { name: "lab.css", content_type: "text/css; charset=utf-8", body: include_str!("../page/lab.css") },
    Asset { name: "lab.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../page/lab.js") },
    Asset { name: "plots.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../page/plots.js") },
    Asset {
        name: "explore.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../page/explore.js"),
    },
];

const INDEX: &str = include_str!("../page/index.html");

/// Scripts and styles from the lab only; pictures also as data and blob URLs (downloads).
const POLICY: &str =
    "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'";

fn respond(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

pub(crate) async fn index() -> Response {
    respond("text/html; charset=utf-8", INDEX)
}

pub(crate) async fn asset(Path(name): Path<String>) -> Result<Response, ApiError> {
    let asset = ASSETS
        .iter()
        .find(|a| a.name == name)
        .ok_or_else(|| ApiError::not_found("name", format!("no asset {name:?}")))?;
    Ok(respond(asset.content_type, asset.body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_load_is_under_500_kb_and_names_only_assets_the_lab_has() {
        let bytes = INDEX.len() + ASSETS.iter().map(|a| a.body.len()).sum::<usize>();
        assert!(bytes < 500_000, "the page and its assets weigh {bytes} bytes");
        let mut named = Vec::new();
        for page in std::iter::once(INDEX).chain(ASSETS.iter().map(|a| a.body)) {
            for piece in page.split("assets/").skip(1) {
                named.push(piece.split(['"', '\'', ')']).next().unwrap_or(""));
            }
        }
        assert!(!named.is_empty(), "the page loads no asset");
        for name in named {
            assert!(ASSETS.iter().any(|a| a.name == name), "the page names {name:?}, which the lab does not serve");
        }
    }
}
