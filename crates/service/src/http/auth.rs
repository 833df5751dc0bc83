//! Authentication: one token, accepted as the password of HTTP Basic credentials
//! (any user name: TAO's client sends `$metricstoken`) or as `Bearer <token>`, and
//! compared in constant time.

use std::fmt;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use subtle::ConstantTimeEq;

use super::error::ApiError;
use super::AppState;
use crate::error::ServeError;

/// The variable that holds the token.
pub const TOKEN_VARIABLE: &str = "NIXL_TELEMETRY_METRICS_TOKEN";

/// The secret clients must present. Shown as `***` in debug output.
#[derive(Clone)]
pub struct Token(Arc<[u8]>);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

impl Token {
    /// A token; refused when empty or when it holds characters no `Authorization`
    /// header can carry (control characters).
    pub fn new(secret: &str) -> Result<Token, ServeError> {
        if secret.is_empty() {
            return Err(ServeError::BadToken {
                variable: TOKEN_VARIABLE,
                reason: "empty: give a secret, or unset it to serve without authentication",
            });
        }
        if secret.chars().any(char::is_control) {
            return Err(ServeError::BadToken {
                variable: TOKEN_VARIABLE,
                reason: "holds control characters, which no client can send",
            });
        }
        if secret.trim() != secret {
            return Err(ServeError::BadToken {
                variable: TOKEN_VARIABLE,
                reason: "begins or ends with white space, which a client cannot send as \
                         `Bearer <token>`; remove it",
            });
        }
        Ok(Token(secret.as_bytes().into()))
    }

    /// The token of [`TOKEN_VARIABLE`], if it is set.
    pub fn from_env() -> Result<Option<Token>, ServeError> {
        match std::env::var(TOKEN_VARIABLE) {
            Ok(secret) => Token::new(&secret).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(ServeError::BadToken {
                variable: TOKEN_VARIABLE,
                reason: "not valid UTF-8",
            }),
        }
    }

    /// Whether an `Authorization` header carries this token.
    pub fn accepts(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some(value) = authorization else {
            return false;
        };
        let value = value.as_bytes();
        let split = value.iter().position(|b| *b == b' ').unwrap_or(value.len());
        let (scheme, rest) = value.split_at(split);
        let rest = rest.trim_ascii();
        let presented: Vec<u8> = if scheme.eq_ignore_ascii_case(b"bearer") {
            rest.to_vec()
        } else if scheme.eq_ignore_ascii_case(b"basic") {
            let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(rest) else {
                return false;
            };
            match decoded.iter().position(|b| *b == b':') {
                Some(colon) => decoded[colon + 1..].to_vec(),
                None => return false,
            }
        } else {
            return false;
        };
        bool::from(presented.as_slice().ct_eq(&self.0))
    }
}

/// Middleware of the protected routes: passes a request with the token, answers
/// 401 to any other. Without a token configured every request passes.
pub(crate) async fn require_token(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    match &state.token {
        Some(token) if !token.accepts(request.headers().get(header::AUTHORIZATION)) => {
            ApiError::Unauthorized.into_response()
        }
        _ => next.run(request).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str) -> HeaderValue {
        HeaderValue::from_str(text).unwrap()
    }

    fn basic(user: &str, password: &str) -> HeaderValue {
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        header(&format!("Basic {encoded}"))
    }

    #[test]
    fn basic_with_any_user_and_bearer_are_accepted() {
        let token = Token::new("s3cret:with:colons").unwrap();
        assert!(token.accepts(Some(&basic("$metricstoken", "s3cret:with:colons"))));
        assert!(token.accepts(Some(&basic("", "s3cret:with:colons"))));
        assert!(token.accepts(Some(&header("Bearer s3cret:with:colons"))));
        assert!(token.accepts(Some(&header("bearer  s3cret:with:colons "))));
        for wrong in [
            basic("$metricstoken", "s3cret"),
            basic("s3cret:with:colons", ""),
            header("Bearer s3cret"),
            header("Bearer"),
            header("Basic !!!"),
            header("Token s3cret:with:colons"),
            header("s3cret:with:colons"),
        ] {
            assert!(!token.accepts(Some(&wrong)), "{wrong:?}");
        }
        assert!(!token.accepts(None));
        assert_eq!(format!("{token:?}"), "Token(***)");
    }

    #[test]
    fn unusable_tokens_are_refused() {
        assert!(Token::new("").unwrap_err().to_string().contains("empty"));
        assert!(Token::new("a\nb").is_err());
        for spaced in ["token ", " token", "token\u{a0}"] {
            let err = Token::new(spaced).unwrap_err().to_string();
            assert!(err.contains("white space"), "{spaced:?}: {err}");
        }
        Token::new("in ner").unwrap();
    }
}
