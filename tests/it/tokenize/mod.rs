//! Request logs through tokenizers: `litehit trace`, real npm tokenizers and the chat-template
//! budget.

mod cache_output;
mod cache_output_live;
mod real;
mod template_budget;
mod trace;
