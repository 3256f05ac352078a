//! ds4-tok
