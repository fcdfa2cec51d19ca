<?php
// A PSR-4 autoloader for use without Composer (Composer's autoload does the same).
spl_autoload_register(static function (string $class): void {
    if (str_starts_with($class, 'Rlserver\\')) {
        $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, 9)) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});
