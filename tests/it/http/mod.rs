//! `watch --listen`: HTTP ingest, its limits in a hostile world, and OpenAI request logs live.

pub(crate) mod ingest;
mod limits;
mod openai_live;
