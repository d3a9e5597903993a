//! What the lab answers when a request cannot be served: a status and a
//! JSON body naming the field at fault, `{"error": "...", "field": "..."}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A refused request: its status, the field at fault and why.
///
/// ```
/// let err = lingo_lab::ApiError::bad_request("settings.training.epochs", "must be at least 1, got 0");
/// assert_eq!(err.status(), 400);
/// assert_eq!(err.field(), "settings.training.epochs");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{field}: {error}")]
pub struct ApiError {
    #[serde(skip)]
    status: u16,
    /// The field at fault (`settings.training.epochs`, `id`, `request`).
    field: String,
    /// What is wrong with it.
    error: String,
}

impl ApiError {
    /// Any status, as axum's own refusals carry it (413 for a body too large).
    pub(crate) fn with_status(status: StatusCode, field: &str, error: impl Into<String>) -> ApiError {
        ApiError { status: status.as_u16(), field: field.to_string(), error: error.into() }
    }

    /// 400: the field's value cannot be used.
    ///
    /// ```
    /// assert_eq!(lingo_lab::ApiError::bad_request("from", "not a number").status(), 400);
    /// ```
    pub fn bad_request(field: &str, error: impl Into<String>) -> ApiError {
        ApiError::with_status(StatusCode::BAD_REQUEST, field, error)
    }

    /// 404: nothing goes by that name.
    ///
    /// ```
    /// assert_eq!(lingo_lab::ApiError::not_found("id", "no run 9").status(), 404);
    /// ```
    pub fn not_found(field: &str, error: impl Into<String>) -> ApiError {
        ApiError::with_status(StatusCode::NOT_FOUND, field, error)
    }

    /// 409: the request does not fit the run's state (an ended run paused).
    ///
    /// ```
    /// assert_eq!(lingo_lab::ApiError::conflict("id", "run 1 has ended").status(), 409);
    /// ```
    pub fn conflict(field: &str, error: impl Into<String>) -> ApiError {
        ApiError::with_status(StatusCode::CONFLICT, field, error)
    }

    /// 429: as many lessons train as the lab allows.
    ///
    /// ```
    /// assert_eq!(lingo_lab::ApiError::too_many("lesson", "stop one first").status(), 429);
    /// ```
    pub fn too_many(field: &str, error: impl Into<String>) -> ApiError {
        ApiError::with_status(StatusCode::TOO_MANY_REQUESTS, field, error)
    }

    /// 500: the lab could not do what was asked (no thread to start).
    ///
    /// ```
    /// assert_eq!(lingo_lab::ApiError::internal("no thread").status(), 500);
    /// ```
    pub fn internal(error: impl Into<String>) -> ApiError {
        ApiError::with_status(StatusCode::INTERNAL_SERVER_ERROR, "request", error)
    }

    /// The HTTP status.
    ///
    /// ```
    /// assert_eq!(lingo_lab::ApiError::conflict("id", "ended").status(), 409);
    /// ```
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The field at fault.
    ///
    /// ```
    /// assert_eq!(lingo_lab::ApiError::not_found("id", "no run 9").field(), "id");
    /// ```
    pub fn field(&self) -> &str {
        &self.field
    }
}

/// A lesson's refusal of its settings names the field by its path.
impl From<lingo_lessons::Error> for ApiError {
    fn from(err: lingo_lessons::Error) -> ApiError {
        match &err {
            lingo_lessons::Error::Setting { name, .. } => ApiError::bad_request(name, err.to_string()),
            _ => ApiError::bad_request("request", err.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(self)).into_response()
    }
}
