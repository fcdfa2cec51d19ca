<?php

declare(strict_types=1);

namespace Rlserver;

enum WindowMode: string
{
    case Fixed = 'FIXED';     // epoch-aligned fixed windows
    case Sliding = 'SLIDING'; // sliding-window counter, O(1)
    case Log = 'LOG';         // exact sliding log, O(limit)
}
