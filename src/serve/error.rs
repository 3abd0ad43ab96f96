//! Errors of the service. Every error has one shape, as Meilisearch does it:
//! `{"message", "code", "type", "parameter"}` — `type` is `invalid_request` for the
//! client's fault (4xx) and `internal` for the server's (5xx); `parameter` names what
//! was wrong when a parameter was. The Wayback CDX API's text output answers in plain
//! text, as IA's does; pywb's `/{collection}` in JSON, as pywb's does.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::index::IndexError;

/// An error answer.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// A stable code (`bad_parameter`, `not_found`, …).
    pub code: &'static str,
    /// The parameter at fault, if one was.
    pub parameter: Option<String>,
    /// What went wrong and what was expected.
    pub message: String,
    /// Answer in plain text (CDX text endpoints).
    pub plain: bool,
}

impl ApiError {
    /// A bad parameter: names it and says what was expected.
    pub fn bad(parameter: &str, message: String) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code: "bad_parameter",
            parameter: Some(parameter.to_string()),
            message: format!("{parameter}: {message}"),
            plain: false,
        }
    }

    /// The answer was not ready within `serve.request_timeout_s`.
    pub fn timed_out(timeout_s: u64) -> ApiError {
        ApiError {
            status: StatusCode::REQUEST_TIMEOUT,
            code: "timeout",
            parameter: None,
            message: format!(
                "no answer within {timeout_s} s (serve.request_timeout_s), counted from when the request arrived"
            ),
            plain: false,
        }
    }

    /// An access rule or embargo refuses it (`block`: listed, not replayed).
    pub fn forbidden(message: String) -> ApiError {
        ApiError {
            status: StatusCode::FORBIDDEN,
            code: "blocked",
            parameter: None,
            message,
            plain: false,
        }
    }

    /// A parameter over a configured size.
    pub fn too_long(parameter: &str, limit: usize) -> ApiError {
        ApiError {
            status: StatusCode::URI_TOO_LONG,
            code: "too_long",
            parameter: Some(parameter.to_string()),
            message: format!("{parameter}: longer than {limit} characters (serve.max_url_chars)"),
            plain: false,
        }
    }

    /// A request without the credentials it needs.
    pub fn unauthorized(message: String) -> ApiError {
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            code: "unauthorized",
            parameter: None,
            message,
            plain: false,
        }
    }

    /// Something that is not there.
    pub fn not_found(what: &str, message: String) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            code: "not_found",
            parameter: Some(what.to_string()),
            message,
            plain: false,
        }
    }

    /// Not ready (no snapshot yet) or shutting down.
    pub fn unavailable(message: String) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "unavailable",
            parameter: None,
            message,
            plain: false,
        }
    }

    /// An archived record larger than the server reads for replay.
    pub fn too_large(message: String) -> ApiError {
        ApiError {
            status: StatusCode::INSUFFICIENT_STORAGE,
            code: "over_replay_cap",
            parameter: None,
            message,
            plain: false,
        }
    }

    /// The server's fault.
    pub fn internal(message: String) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal",
            parameter: None,
            message,
            plain: false,
        }
    }

    /// The same error as plain text.
    pub fn plain(mut self) -> ApiError {
        self.plain = true;
        self
    }
}

impl From<IndexError> for ApiError {
    fn from(e: IndexError) -> ApiError {
        match &e {
            IndexError::NotFound(m) => ApiError::not_found("url", m.clone()),
            IndexError::Invalid(m) | IndexError::Damaged(m) => ApiError {
                status: StatusCode::BAD_REQUEST,
                code: "invalid_request",
                parameter: None,
                message: m.clone(),
                plain: false,
            },
            // Its time ran out, its client left, or it reads more than allowed: the
            // server would answer, not this way (503, as for an overloaded server).
            IndexError::OverBudget(m) => ApiError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                code: "over_budget",
                parameter: None,
                message: m.clone(),
                plain: false,
            },
            _ => ApiError::internal(e.to_string()),
        }
    }
}

impl ApiError {
    /// The JSON body of the answer (for a response written by hand, too:
    /// `super::gate`).
    pub fn json(&self) -> String {
        let kind = if self.status.is_client_error() {
            "invalid_request"
        } else {
            "internal"
        };
        serde_json::json!({
            "message": self.message,
            "code": self.code,
            "type": kind,
            "parameter": self.parameter,
        })
        .to_string()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = if self.plain {
            (
                self.status,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                format!("{}\n", self.message),
            )
                .into_response()
        } else {
            (
                self.status,
                [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
                self.json(),
            )
                .into_response()
        };
        // For `/metrics`' count of error answers by code.
        resp.extensions_mut()
            .insert(super::metrics::ErrorCode(self.code));
        resp
    }
}
