mod permissions_broker;
mod permissions_cases;
mod permissions_common;
mod permissions_more;
mod permissions_property;
