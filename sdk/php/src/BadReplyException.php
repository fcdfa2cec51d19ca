<?php

declare(strict_types=1);

namespace Rlserver;

/** The server answered something that is not a decision. */
class BadReplyException extends RlserverException
{}
