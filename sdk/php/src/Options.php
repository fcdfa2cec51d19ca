<?php

declare(strict_types=1);

namespace Rlserver;

final class Options
{
    /** @var null|\Closure(ErrorEvent): void */
    public readonly ?\Closure $onError;

    /**
     * @param float $timeout seconds a command may take (phpredis' read timeout, set on the
     *     connection this client is given); 0 leaves the connection's own timeout
     * @param FailureMode $failure what to answer when the server cannot be reached
     * @param null|callable(ErrorEvent): void $onError called each time the failure policy answers
     * @param float $closedRetryAfter seconds of retryAfter/resetAfter a fail-closed denial carries
     */
    public function __construct(
        public readonly float $timeout = 0,
        public readonly FailureMode $failure = FailureMode::Error,
        ?callable $onError = null,
        public readonly float $closedRetryAfter = 1.0,
    ) {
        $this->onError = $onError === null ? null : \Closure::fromCallable($onError);
    }
}
