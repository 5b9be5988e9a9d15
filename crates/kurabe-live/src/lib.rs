//! kurabe's views of a load while it runs (issue 26).
//!
//! [`board::Board`] is an [`kurabe_http::load::Observer`]: it takes the
//! engine's snapshots and the local server's samples and turns them into
//! one immutable [`board::Frame`] at a time (rates over the last second,
//! percentiles of the last seconds and of the whole run, histogram
//! buckets). [`openmetrics`] writes a frame as OpenMetrics text;
//! [`endpoint`] serves it over HTTP from a thread of its own, bounded so
//! that no scraper can slow the load; [`addr`] parses `--prometheus-addr`;
//! [`slot::Slot`] holds the board of the newest of a series of loads (a
//! worker's shares) for an endpoint that outlives each of them;
//! [`view`] draws a frame as the live terminal view's widget and [`tui`]
//! puts it on the terminal (raw mode, the alternate screen, the keys);
//! [`views`] starts and ends the endpoint and the terminal view together.
//!
//! Must not print, and must not reach into the engine: everything comes
//! through the observer (the model's snapshots), a few times a second,
//! never per request.

pub mod addr;
pub mod board;
pub mod endpoint;
pub mod here;
pub mod openmetrics;
pub mod slot;
pub mod tui;
pub mod view;
pub mod views;
