<?php

declare(strict_types=1);

namespace Rlserver;

final class Options
{
    /** @var null|\Closure(ErrorEvent): void */
    public readonly ?\Closure $onError;
    /** @var \Closure(string): void */
    public readonly \Closure $log;

    /**
     * @param float $timeout seconds a command may take (phpredis' read timeout, set on the
     *     connection this client is given), and connecting with Client::connect(); 0 leaves
     *     the connection's own timeout
     * @param FailureMode $failure what to answer when the server cannot be reached
     * @param null|callable(ErrorEvent): void $onError called each time the failure policy answers,
     *     and for each configuration error (ErrorEvent::$config)
     * @param float $closedRetryAfter seconds of retryAfter/resetAfter a fail-closed denial carries
     * @param null|callable(string): void $log receives a line for each configuration error
     *     (default: error_log)
     */
    public function __construct(
        public readonly float $timeout = 0,
        public readonly FailureMode $failure = FailureMode::Error,
        ?callable $onError = null,
        public readonly float $closedRetryAfter = 1.0,
        ?callable $log = null,
    ) {
        $this->onError = $onError === null ? null : \Closure::fromCallable($onError);
        $this->log = $log === null ? static function (string $line): void {
            error_log($line);
        } : \Closure::fromCallable($log);
    }
}
