//! What the service's integration tests share.
#![allow(dead_code)]

pub mod http;
pub mod postgres;
pub mod records;
pub mod server;
