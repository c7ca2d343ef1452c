"""Share-partition state: the __share_group_state codec, replay, in-flight windows, lag."""
