//! ab's remaining flags of `kurabe http`: the report layout (`-d`, `-S`,
//! `-w`, `-x`, `-y`, `-z`), the request and connection-setup flags as the
//! library's plain values (`kurabe_http::cli_config` checks them), and
//! where the `-v` log goes (its lines are `kurabe_http::ab_verbose`'s).
//!
//! Owns copying those flags and printing the `-v` lines. Must not show the
//! `-P` or `-A` password anywhere.

use std::io::Write as _;
use std::sync::Arc;

use anyhow::bail;
use kurabe_http::ab_verbose;
use kurabe_http::cli_config::{RequestFlags, SetupFlags};
use kurabe_http::client::HeadTrace;
use kurabe_report::{AbHtml, AbLayout, AbText};

use super::{Args, Format};

/// ab's layout flags → the report layout; `-x`/`-y`/`-z` imply `-w`, as in ab.
pub(super) fn layout(args: &Args) -> anyhow::Result<AbLayout> {
    let html = args.html
        || args.table_attrs.is_some()
        || args.tr_attrs.is_some()
        || args.td_attrs.is_some();
    if html && args.format != Format::Text {
        bail!("-w (or -x/-y/-z) prints ab's HTML table: drop --format, or drop -w");
    }
    let html = html.then(|| {
        let d = AbHtml::default();
        AbHtml {
            table: args.table_attrs.clone().unwrap_or(d.table),
            tr: args.tr_attrs.clone().unwrap_or(d.tr),
            td: args.td_attrs.clone().unwrap_or(d.td),
        }
    });
    Ok(AbLayout {
        text: AbText {
            percentiles: !args.no_percentiles,
            confidence: !args.no_confidence,
            variable_length: args.variable_length,
        },
        html,
    })
}

/// The request flags as the library's plain values.
pub(super) fn request(args: &Args) -> RequestFlags {
    RequestFlags {
        method: args.method.clone(),
        head: args.head,
        post_file: args.post_file.clone(),
        put_file: args.put_file.clone(),
        content_type: args.content_type.clone(),
        headers: args.headers.clone(),
        cookies: args.cookies.clone(),
        auth: args.auth.clone(),
    }
}

/// ab's connection-setup flags (`-b`, `-B`, `-X`, `-P`, `-E`, `-f`, `-Z`) as plain values.
pub(super) fn setup(args: &Args) -> SetupFlags {
    SetupFlags {
        socket_buffer: args.socket_buffer,
        bind: args.bind.clone(),
        proxy: args.proxy.clone(),
        proxy_auth: args.proxy_auth.clone(),
        client_cert: args.client_cert.clone(),
        tls_protocol: args.tls_protocol.clone(),
        ciphers: args.ciphers.clone(),
    }
}

/// Print `-v` output where ab prints it, stdout, unless the report there is
/// JSON, CSV or Markdown (then stderr, so the document stays parseable).
/// A closed pipe ends the log quietly (the report write reports it).
pub(super) fn verbose(format: Format, text: &str) {
    let _ = if format == Format::Text {
        std::io::stdout().lock().write_all(text.as_bytes())
    } else {
        std::io::stderr().lock().write_all(text.as_bytes())
    };
}

/// The `-v 2` tap: every response head, logged as ab logs it.
pub(super) fn trace(format: Format, verbosity: u8) -> HeadTrace {
    HeadTrace(Arc::new(move |bytes: &[u8]| {
        verbose(format, &ab_verbose::log_head(bytes, verbosity))
    }))
}
