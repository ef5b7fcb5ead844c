//! Request logs through tokenizers: `litehit trace`, real npm tokenizers and the chat-template
//! budget.

mod cache_output;
mod real;
mod template_budget;
mod trace;
