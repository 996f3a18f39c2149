;;; SBCL compiles these into its dynamic space, a mapping of its core file (no ELF,
;;; no CFI), and runs them on the Lisp stack it entered from C through
;;; call_into_lisp; fib's recursion keeps frame pointers, as SBCL's code does.
;;; Usage: sbcl --script work.lisp [ROUNDS]
(defun fib (n)
  (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2)))))

(defun work (rounds)
  (let ((acc 0))
    (dotimes (i rounds acc)
      (incf acc (fib 30)))))

(compile 'fib)
(compile 'work)
(let ((arg (second sb-ext:*posix-argv*)))
  (print (work (if arg (parse-integer arg) 60))))
