<?php

declare(strict_types=1);

namespace Rlserver;

/** What a limiter answers when the server cannot be reached. */
enum FailureMode
{
    /** Raise UnreachableException (the default). */
    case Error;
    /** Admit: limit and remaining are the limiter's limit. */
    case Open;
    /** Deny, with Options::$closedRetryAfter as retry and reset. */
    case Closed;
    /** Decide with an in-process token bucket of the same limit and window, per key. */
    case Local;
}
