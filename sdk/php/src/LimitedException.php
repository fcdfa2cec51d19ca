<?php

declare(strict_types=1);

namespace Rlserver;

/** Raised by the scoped forms when the limiter denies the request; carries the decision. */
class LimitedException extends RlserverException
{
    public function __construct(public readonly Decision $decision)
    {
        parent::__construct("rlserver: rate limited");
    }
}
