import { useId, useState } from 'react';

/** A read-only value with a Copy button: secrets shown once, invitation links. */
export function CopyField({ label, value, secret }: { label: string; value: string; secret?: boolean }) {
  const id = useId();
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied('yes');
    } catch {
      // No clipboard permission: select the text so Ctrl+C works.
      (document.getElementById(id) as HTMLInputElement | null)?.select();
      setCopied('failed');
    }
  };
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <div className="copy-row">
        <input
          id={id}
          className={secret ? 'input mono' : 'input'}
          readOnly
          value={value}
          onFocus={(e) => e.currentTarget.select()}
          data-testid={secret ? 'secret' : undefined}
        />
        <button type="button" className="button" onClick={copy} aria-label={`Copy ${label.toLowerCase()}`}>
          {copied === 'yes' ? 'Copied' : 'Copy'}
        </button>
      </div>
      <span className="muted small" role="status">
        {copied === 'failed' ? 'Copying is blocked here: the text is selected, press Ctrl+C.' : ''}
      </span>
    </div>
  );
}
